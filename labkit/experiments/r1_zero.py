"""R1-Zero at toy scale: RL with an accuracy and a format reward from a thinking cold start.

DeepSeek-R1 (DeepSeek-AI 2025, arXiv 2501.12948, sec. 2.2, fig. 3): GRPO with rule-based rewards
    r = r_accuracy + r_format
(accuracy: the answer in <answer> is right; format: the thought is in <think> tags before it)
makes R1-Zero's responses grow longer as its accuracy grows: it learns to think longer.

The toy (``scratchpad`` task: the sum of five digits): the cold starts ``tiny-think`` (SFT,
half the targets think first) and ``tiny-direct`` (direct answers only) from
``scripts/make_scratchpad_checkpoint.py``. Three arms, each run on the same seeds and budget:
  think + format   tiny-think, r = answer_match + w_f think_format       (R1-Zero's recipe)
  think, acc only  tiny-think, r = answer_match                         (the format reward's role)
  direct + format  tiny-direct, r = answer_match + w_f think_format     (a start that never thinks)
Per-sample metrics are logged as rewards of weight 0 (``well_formed``, ``thinks``, ``mixed``), so
``rewards/<name>/mean`` is their rate in the training batch. Held-out numbers are sampled at
temperature 1 on held-out prompts, before and after RL, with the run's seed.

Departure: a correct thought has a fixed length here (four running sums of one-digit operands),
so "length grows" can only show up as a switch from direct answers to thinking; a task whose
thoughts lengthen with difficulty is needed for ever-longer thoughts.
"""

from __future__ import annotations

import re
import time

import numpy as np
import pandas as pd

from labkit.algos.grpo import GRPOTrainer
from labkit.experiments.arms import grpo_run
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, Outcome
from labkit.models.policy import load_policy
from labkit.rewards.reasoning import think_format
from labkit.runs.evaluate import probe
from labkit.tasks import get_task
from labkit.tasks.scratchpad import notation_of, parse

CLAIM = (
    "DeepSeek-R1-Zero (DeepSeek-AI 2025, arXiv 2501.12948, sec. 2.2.4, fig. 3): RL with a "
    "rule-based accuracy reward plus a format reward (think inside <think> tags) makes the "
    "average response length grow steadily as accuracy grows: the model learns by itself to "
    "spend more thinking on a problem (the 'aha moment'). On the toy: from a cold start that "
    "thinks half the time, GRPO raises accuracy and the share and length of thoughts; from a "
    "direct-answer start it cannot."
)
W_FORMAT = 0.5
"""Weight of the format reward next to the accuracy reward (1.0)."""
SETUP = {
    "learning_rate": 5e-4,
    "num_iterations": 1,
    "num_generations": 4,
    "prompts_per_step": 16,
    "beta": 0.0,
    "max_completion_length": 72,
    "reward_runtime": "inline",
}
"""The GRPO setup shared by labs 90-92."""
HELDOUT = {"full": 300, "fast": 32}
"""Held-out prompts per probe, one sample each at T = 1 (s.e. of a rate <= 0.029 at 300)."""


def well_formed(completions: list[str], **kwargs) -> list[float]:
    """A metric (weight 0): 1.0 for ``[<think>..</think>]<answer>..</answer>``."""
    return [float(parse(c).well_formed) for c in completions]


def thinks(completions: list[str], **kwargs) -> list[float]:
    """A metric (weight 0): 1.0 when a well-formed completion has a non-empty thought (R1's
    format reward, :func:`~labkit.rewards.reasoning.think_format`, logged under its own name)."""
    return think_format(completions)


def mixed(completions: list[str], **kwargs) -> list[float | None]:
    """A metric (weight 0): 1.0 when a thought uses both notations (digits and letters, in one
    step or across steps); None without a thought.

    >>> mixed(["<think>1+2=3 d+e=h</think><answer>7</answer>", "<think>1+2=3</think><answer>3"
    ...        "</answer>", "<answer>3</answer>"])
    [1.0, 0.0, None]
    """
    out = []
    for c in completions:
        p = parse(c)
        if not p.think:
            out.append(None)
            continue
        kinds = {notation_of(w) for w in p.think.split()}
        out.append(float("mixed" in kinds or {"digits", "letters"} <= kinds))
    return out


METRICS = [well_formed, thinks, mixed]
"""Logged every step with weight 0: ``rewards/well_formed/mean`` etc."""
CURVES = (
    "accuracy",
    "rewards/well_formed/mean",
    "rewards/thinks/mean",
    "rewards/mixed/mean",
    "len/mean",
    "len/correct",
)
"""The training-batch metrics labs 90-92 draw."""


def heldout(model, tokenizer, n: int = 200, seed: int = 0) -> dict:
    """Held-out stats, one sample per prompt at temperature 1 on the first ``n`` held-out
    prompts (:func:`~labkit.runs.evaluate.probe`, one batch): accuracy, well-formed rate, think
    rate, mixing rate (of thoughts), mean length (characters) of all and of correct
    completions."""
    p = probe(
        model,
        tokenizer,
        get_task("scratchpad"),
        n,
        max_completion_length=SETUP["max_completion_length"],
        seed=seed,
        batch_size=None,
    )
    c = p.completions
    ok = np.array(p.correct, dtype=float)
    length = np.array([len(x) for x in c], dtype=float)
    mix = [m for m in mixed(c) if m is not None]
    return {
        "accuracy": ok.mean(),
        "well_formed": np.mean(well_formed(c)),
        "think": np.mean(thinks(c)),
        "mixed": np.mean(mix) if mix else float("nan"),
        "length": length.mean(),
        "length correct": length[ok > 0].mean() if ok.any() else float("nan"),
    }


def slope(metrics: pd.DataFrame, key: str) -> float:
    """Least-squares slope of ``key`` over ``step``, NaN steps skipped.

    >>> round(slope(pd.DataFrame({"step": [1, 2, 3], "m": [1.0, 2.0, 3.0]}), "m"), 6)
    1.0
    """
    m = metrics[["step", key]].dropna()
    return float(np.polyfit(m["step"], m[key], 1)[0]) if len(m) > 1 else float("nan")


def before_after(before: dict, after: dict, keys=("accuracy", "think", "length")) -> dict:
    """Held-out ``<key> before``, ``<key> after`` and ``<key> gain`` (after - before), plus
    every other held-out stat after RL.

    >>> before_after({"accuracy": 0.5}, {"accuracy": 0.75, "mixed": 0.1}, ["accuracy"])
    {'accuracy before': 0.5, 'accuracy after': 0.75, 'accuracy gain': 0.25, 'mixed': 0.1}
    """
    out = {}
    for k in keys:
        out |= {f"{k} before": before[k], f"{k} after": after[k], f"{k} gain": after[k] - before[k]}
    return out | {k: v for k, v in after.items() if k not in keys}


ARMS = {
    "think + format": {"model": "tiny-think", "reward_weights": [1.0, W_FORMAT]},
    "think, acc only": {"model": "tiny-think", "reward_weights": [1.0, 0.0]},
    "direct + format": {"model": "tiny-direct", "reward_weights": [1.0, W_FORMAT]},
}
"""Arm -> cold start and the weights of ``[answer_match, think_format]``."""


def recipe_run(model, weights, task, seed, steps, run_name, tick, **overrides):
    """A resumable GRPO run of R1-Zero's rewards ``[answer_match, think_format]`` with
    ``weights`` (the weight-0 ``METRICS`` logged beside them) on ``task`` from ``model``:
    ``SETUP`` with ``overrides``, checkpoints every third of the run, no KL tracking."""
    return grpo_run(
        model,
        {"reward_weights": [*weights, *[0.0] * len(METRICS)]},
        seed=seed,
        steps=steps,
        run_name=run_name,
        tick=tick,
        reward_funcs=["answer_match", "think_format", *METRICS],
        task=task,
        track_kl=False,
        save_steps=max(1, steps // 3),
        **(SETUP | overrides),
    )


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed: GRPO on ``scratchpad`` from the arm's cold start (``SETUP``, the
    weight-0 ``METRICS`` logged), held-out stats before and after, and the training batch's
    length slope over the second half of the run."""
    n = HELDOUT["fast" if fast else "full"]
    before = heldout(*load_policy(settings["model"]), n=n, seed=seed)
    trainer = recipe_run(
        settings["model"], settings["reward_weights"], "scratchpad", seed, steps, run_name, tick
    )
    m = trainer.log.metrics
    after = heldout(trainer.model, trainer.tokenizer, n=n, seed=seed)
    late = m[m["step"] > steps / 2]
    summary = before_after(before, after) | {"len/mean slope (2nd half)": slope(late, "len/mean")}
    trainer.log.close()  # the run is done: its folder is free for a later resume
    return Outcome(summary, m)


def single_run(
    name: str,
    model: str,
    rewards: list,
    weights: list[float],
    steps: int,
    seed: int = 0,
    progress: bool = False,
    prefix: str = "lab90-",
    **config,
):
    """One GRPO run on ``scratchpad`` with ``rewards`` (+ the weight-0 ``METRICS``), outside the
    harness: (trainer, seconds), logged to ``runs/<prefix><slug of name>``. Labs 91 and 92 run
    their arms through it until they move onto the harness."""
    t0 = time.perf_counter()
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    trainer = GRPOTrainer(
        model,
        reward_funcs=list(rewards) + METRICS,
        task="scratchpad",
        seed=seed,
        track_kl=False,
        run_name=prefix + slug,
        save_steps=0,
        **(
            SETUP
            | {"max_steps": steps, "reward_weights": list(weights) + [0.0] * len(METRICS)}
            | config
        ),
    )
    trainer.algorithm = name
    trainer.train(progress=progress)
    return trainer, time.perf_counter() - t0


SOURCE = "DeepSeek-R1 (DeepSeek-AI 2025, arXiv 2501.12948)"
RECIPE = "think + format"
FIXED_LENGTH = (
    "A correct thought has a fixed length on this task (four running sums), so length can grow "
    "only by switching from direct answers to thinking; ever-longer thoughts need a task whose "
    "thoughts lengthen with difficulty."
)
EXPERIMENT = Experiment(
    name="r1_zero",
    lab="90_r1_zero_aha",
    arms=ARMS,
    train=train,
    steps=60,
    curves=CURVES,
    claims=(
        Claim(
            "accuracy",
            "RL with accuracy + format rewards raises accuracy",
            f"{SOURCE} sec. 2.2.4, fig. 2",
            metric="accuracy gain",
            arm=RECIPE,
            note="Held-out accuracy after RL minus the cold start's, same probe seed.",
        ),
        Claim(
            "thinking",
            "the model learns by itself to think (more of its answers think)",
            f"{SOURCE} sec. 2.2.4",
            metric="think gain",
            arm=RECIPE,
        ),
        Claim(
            "length",
            "response length grows with accuracy under RL",
            f"{SOURCE} sec. 2.2.4, fig. 3",
            metric="length gain",
            arm=RECIPE,
            note=FIXED_LENGTH,
        ),
        Claim(
            "steady",
            "response length keeps growing through training",
            f"{SOURCE} sec. 2.2.4, fig. 3",
            metric="len/mean slope (2nd half)",
            arm=RECIPE,
            note="Training-batch length (tokens) per step over the second half. " + FIXED_LENGTH,
        ),
    ),
    live={"arms": ["think + format", "direct + format"], "seeds": (0, 1), "steps": 40},
)
