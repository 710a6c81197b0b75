"""R1-Zero at toy scale: RL with an accuracy and a format reward from a thinking cold start.

DeepSeek-R1 (DeepSeek-AI 2025, arXiv 2501.12948, sec. 2.2, fig. 3): GRPO with rule-based rewards
    r = r_accuracy + r_format
(accuracy: the answer in <answer> is right; format: the thought is in <think> tags before it)
makes R1-Zero's responses grow longer as its accuracy grows: it learns to think longer.

The toy (``scratchpad`` task: the sum of five digits): the cold starts ``tiny-think`` (SFT,
half the targets think first) and ``tiny-direct`` (direct answers only) from
``scripts/make_scratchpad_checkpoint.py``. Three GRPO runs from the same seed and budget:
  think + format   tiny-think, r = answer_match + w_f think_format       (R1-Zero's recipe)
  think, acc only  tiny-think, r = answer_match                         (the format reward's role)
  direct + format  tiny-direct, r = answer_match + w_f think_format     (a start that never thinks)
Per-sample metrics are logged as rewards of weight 0 (``well_formed``, ``thinks``, ``mixed``), so
``rewards/<name>/mean`` is their rate in the training batch. Held-out numbers are sampled at
temperature 1 on held-out prompts, before and after RL.
"""

from __future__ import annotations

import re
import time

import numpy as np
import pandas as pd
import torch

from labkit.algos.grpo import GRPOTrainer
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


def train(
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
    """One GRPO run on ``scratchpad`` with ``rewards`` (+ the weight-0 ``METRICS``):
    (trainer, seconds). The log goes to ``runs/<prefix><slug of name>``."""
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


VARIANTS = {
    "think + format": ("tiny-think", [1.0, W_FORMAT]),
    "think, acc only": ("tiny-think", [1.0, 0.0]),
    "direct + format": ("tiny-direct", [1.0, W_FORMAT]),
}
"""name -> (cold start, weights of [answer_match, think_format])."""


def run(
    fast: bool = False,
    seed: int = 0,
    steps: int | None = None,
    n_eval: int | None = None,
    progress: bool = True,
) -> dict:
    """The three ``VARIANTS`` from the same seed and budget (full 60 steps, fast 8), with
    held-out stats before and after. Returns ``{"runs", "table", "config"}``."""
    torch.set_num_threads(1)
    steps, n_eval = steps or (8 if fast else 60), n_eval or (100 if fast else 300)
    runs, rows, before = {}, [], {}
    for name, (start, weights) in VARIANTS.items():
        if start not in before:
            before[start] = heldout(*load_policy(start), n=n_eval, seed=seed)
        trainer, secs = train(
            name, start, ["answer_match", "think_format"], weights, steps, seed, progress
        )
        runs[name] = trainer.log
        after = heldout(trainer.model, trainer.tokenizer, n=n_eval, seed=seed)
        rows.append(table_row(name, before[start], after, trainer.log.metrics, secs))
    return {
        "runs": runs,
        "table": pd.DataFrame(rows).set_index("run"),
        "config": {"steps": steps, "seed": seed, "n_eval": n_eval, **SETUP},
    }


def slope(metrics: pd.DataFrame, key: str) -> float:
    """Least-squares slope of ``key`` over ``step``, NaN steps skipped.

    >>> round(slope(pd.DataFrame({"step": [1, 2, 3], "m": [1.0, 2.0, 3.0]}), "m"), 6)
    1.0
    """
    m = metrics[["step", key]].dropna()
    return float(np.polyfit(m["step"], m[key], 1)[0]) if len(m) > 1 else float("nan")


def table_row(name: str, before: dict, after: dict, metrics: pd.DataFrame, secs: float) -> dict:
    """One run's row: held-out before -> after, and the training batch's slopes per step."""
    row = {"run": name}
    for k in ("accuracy", "think", "length", "length correct", "well_formed", "mixed"):
        row[f"{k} before"], row[f"{k} after"] = before[k], after[k]
    row["slope len/mean"] = slope(metrics, "len/mean")
    row["slope accuracy"] = slope(metrics, "accuracy")
    row["seconds"] = secs
    return row


def verdict(results: dict) -> str:
    """Plain words with the numbers: length grows with accuracy from the thinking start, not
    from the direct one; what the format reward adds to thinking."""
    t = results["table"]
    r, a, d = t.loc["think + format"], t.loc["think, acc only"], t.loc["direct + format"]
    acc_up = r["accuracy after"] > r["accuracy before"]
    len_up = r["length after"] > r["length before"] and r["think after"] > r["think before"]
    lines = [
        (
            f"think + format (held-out, T=1): accuracy {r['accuracy before']:.3f} -> "
            f"{r['accuracy after']:.3f}, think rate {r['think before']:.3f} -> "
            f"{r['think after']:.3f}, length {r['length before']:.1f} -> {r['length after']:.1f} "
            "chars."
        ),
        (
            "REPRODUCED (aha): accuracy and response length (thinking) grow together."
            if acc_up and len_up
            else f"NOT REPRODUCED (aha): accuracy up: {acc_up}, thinking and length up: {len_up}."
        ),
        (
            f"direct + format: accuracy {d['accuracy before']:.3f} -> {d['accuracy after']:.3f}, "
            f"think rate {d['think before']:.3f} -> {d['think after']:.3f}, length "
            f"{d['length before']:.1f} -> {d['length after']:.1f}."
        ),
        (
            f"think, acc only: accuracy -> {a['accuracy after']:.3f}, think rate -> "
            f"{a['think after']:.3f} (with the format reward: {r['think after']:.3f})."
        ),
    ]
    return "\n".join(lines)
