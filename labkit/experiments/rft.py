"""RFT vs Online RFT vs GRPO on the same samples (DeepSeekMath, arXiv 2402.03300, 5.2.2).

DeepSeekMath's unified paradigm: every method's gradient is
    grad J = E_{(q, o) ~ D}[ 1/|o| sum_t GC(q, o, t) grad log pi_theta(o_t | q, o_<t) ]
with D and the gradient coefficient GC per method:
- RFT (offline): D = samples of the cold start pi_sft, drawn once; GC = 1[o correct]
  (SFT on the correct ones). Here: :func:`labkit.algos.rejection.rejection_sample`, then
  :class:`~labkit.algos.sft.SFTTrainer`.
- Online RFT: D = samples of the current pi_theta each step; GC = 1[o correct]. Here: the GRPO
  trainer with ``advantage_estimator="reinforce"`` (A = r, r = answer_match in {0, 1}) and
  mu = 1 (ratio 1): exactly SFT on the step's correct samples.
- GRPO: D as online RFT; GC = the group z-score of r, negative on wrong answers.
Their fig. 5 (DeepSeekMath-Instruct 7B, GSM8K / MATH): online RFT > RFT, GRPO > online RFT.

Departures, and why:
- The ``tiny-think`` cold start on the ``scratchpad`` task (five digits to add), 16 prompts x
  G = 4 a step, reward ``answer_match`` only (as DeepSeekMath: accuracy), beta = 0, mu = 1,
  the same learning rate and schedule for all three.
- "Same samples": offline RFT draws steps x 16 prompts x 4 completions from the cold start at
  once, then takes as many SFT steps as the online runs take RL steps, 64 pairs a step.
- SFT's loss is a token mean over the batch; online RFT's is GRPO's per-sample mean over all
  64 samples (wrong ones add 0): a scale difference AdamW largely absorbs.
- Accuracy: held-out, one sample at temperature 1 (a probe every ``eval_every`` steps).
"""

from __future__ import annotations

import random
import re
import time

import pandas as pd

from labkit.algos.grpo import GRPOTrainer
from labkit.algos.rejection import rejection_sample
from labkit.algos.sft import SFTTrainer
from labkit.experiments.dapo import beats
from labkit.models.policy import load_policy
from labkit.tasks import get_task

CLAIM = (
    "DeepSeekMath (Shao et al. 2024, arXiv 2402.03300, section 5.2.2, fig. 5): with the same "
    "data, online RFT (sampling from the current policy) beats offline RFT (sampling once from "
    "the SFT model), and GRPO beats online RFT: its advantages also push down wrong answers."
)
COLD = "tiny-think"
SETUP = {
    "reward_funcs": ["answer_match"],
    "learning_rate": 3e-4,
    "num_iterations": 1,
    "num_generations": 4,
    "prompts_per_step": 16,
    "beta": 0.0,
    "max_completion_length": 64,
}
"""Shared by the three methods (and by lab 93's RL stages)."""
METHODS = {
    "GRPO": {"advantage_estimator": "grpo"},
    "Online RFT": {"advantage_estimator": "reinforce"},
    "Offline RFT": None,
}
"""GRPO-trainer overrides per method; None: rejection sampling once, then SFT."""


def slug(name: str) -> str:
    """A run folder name: ``slug("Online RFT")`` -> ``"online-rft"``."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def probe(model, tok, task, n_eval: int, seed: int) -> dict:
    """Held-out probe (one sample per prompt, T = 1): accuracy, think rate, mean length."""
    s = rejection_sample(
        model,
        tok,
        task,
        task.heldout[:n_eval],
        1,
        seed=seed,
        max_completion_length=SETUP["max_completion_length"],
    ).stats()
    return {k: s[k] for k in ("accuracy", "think_rate", "len_mean")}


def train_method(
    name: str,
    steps: int,
    seed: int,
    n_eval: int,
    eval_every: int,
    model=COLD,
    progress: bool = False,
    prefix: str = "lab94-",
):
    """One method from ``model`` for ``steps`` steps: (trainer, curve rows, seconds). A curve
    row is a held-out probe with the samples spent so far."""
    t0, per_step = time.perf_counter(), SETUP["prompts_per_step"] * SETUP["num_generations"]
    task, overrides = get_task("scratchpad"), METHODS[name]
    common = {
        "seed": seed,
        "max_steps": steps,
        "run_name": prefix + slug(name),
        "save_steps": 0,
        "learning_rate": SETUP["learning_rate"],
    }
    if overrides is None:
        base, tok = load_policy(model) if isinstance(model, str) else model
        rng = random.Random(seed)
        drawn = [rng.choice(task.train) for _ in range(steps * SETUP["prompts_per_step"])]
        rs = rejection_sample(
            base,
            tok,
            task,
            drawn,
            SETUP["num_generations"],
            seed=seed,
            max_completion_length=SETUP["max_completion_length"],
        )
        if not rs.pairs:
            raise ValueError(
                f"offline RFT kept 0 of {rs.stats()['drawn']} samples: give more "
                "steps (samples) or a better cold start"
            )
        trainer = SFTTrainer(
            base,
            rs.pairs,
            task="scratchpad",
            tokenizer=tok,
            batch_size=per_step,
            warmup_steps=0,
            lr_scheduler_type="linear",
            **common,
        )
        spent = lambda step: steps * per_step  # all drawn before the first step
    else:
        trainer = GRPOTrainer(
            model, task="scratchpad", track_kl=False, **(SETUP | overrides | common)
        )
        spent = lambda step: step * per_step
    trainer.algorithm = name
    rows = []

    def log(t, m=None):
        if t.global_step % eval_every == 0 or t.global_step == steps:
            p = probe(t.model, t.tokenizer, task, n_eval, seed + 1)
            rows.append(
                {"method": name, "step": t.global_step, "samples spent": spent(t.global_step), **p}
            )

    log(trainer)
    trainer.train(progress=progress, callback=log)
    return trainer, rows, time.perf_counter() - t0


def run(
    fast: bool = False,
    seed: int = 0,
    steps: int | None = None,
    methods=None,
    heldout: int | None = None,
    eval_every: int | None = None,
    model=COLD,
    progress: bool = True,
) -> dict:
    """Each method of ``METHODS`` from the cold start (full 60 steps, fast 4), probed on
    held-out prompts every ``eval_every`` steps. Returns ``{"runs": {name: RunLog},
    "curves": DataFrame, "table": DataFrame, "config": dict}``."""
    steps = steps or (4 if fast else 60)
    n_eval = heldout or (64 if fast else 400)
    eval_every = eval_every or (steps if fast else 15)
    runs, curves, rows = {}, [], []
    for name in methods or METHODS:
        trainer, curve, secs = train_method(name, steps, seed, n_eval, eval_every, model, progress)
        runs[name], last = trainer.log, curve[-1]
        curves += curve
        rows.append(
            {
                "method": name,
                "held-out accuracy": last["accuracy"],
                "think rate": last["think_rate"],
                "len/mean": last["len_mean"],
                "samples spent": last["samples spent"],
                "wall s": secs,
            }
        )
    curves = pd.DataFrame(curves)
    start = curves[curves["step"] == 0].iloc[0]
    rows.insert(
        0,
        {
            "method": "cold start",
            "held-out accuracy": start["accuracy"],
            "think rate": start["think_rate"],
            "len/mean": start["len_mean"],
            "samples spent": 0,
            "wall s": 0.0,
        },
    )
    return {
        "runs": runs,
        "curves": curves,
        "table": pd.DataFrame(rows).set_index("method"),
        "config": {"steps": steps, "seed": seed, "heldout": n_eval, "model": str(model), **SETUP},
    }


def verdict(results: dict) -> str:
    """The paper's two orderings, and RFT against the cold start, read off the table's
    held-out accuracy (a gain counts beyond two standard errors, :func:`beats`)."""
    t, n = results["table"]["held-out accuracy"], results["config"]["heldout"]
    checks = [
        ("Offline RFT", "cold start", "offline RFT beats the cold start"),
        ("Online RFT", "Offline RFT", "online RFT beats offline RFT"),
        ("GRPO", "Online RFT", "GRPO beats online RFT"),
    ]
    lines = []
    for a, b, what in checks:
        if a in t.index and b in t.index:
            ok = beats(t[a], t[b], n)
            lines.append(
                f"{'REPRODUCED' if ok else 'NOT REPRODUCED'}: {what} "
                f"(held-out accuracy {t[a]:.3f} vs {t[b]:.3f}, {n} prompts)."
            )
    return "\n".join(lines)
