"""Prioritized sampling by pass rate against uniform sampling (Kimi k1.5's curriculum).

Kimi k1.5 (arXiv 2501.12599, sec. 2.3.4, "prioritized sampling"): track each problem's success
rate s_i and sample problems in proportion to 1 - s_i, so training goes where the policy fails.
A GRPO group of G answers teaches only when its rewards differ; its chance of that,
1 - s^G - (1 - s)^G, peaks at s = 1/2, so a second rule weighs prompts by s (1 - s).

The toy: GRPO from ``tiny-think`` on ``scratchpad`` (lab 90's setup: answer_match + 0.5
think_format), the train prompts a fixed pool of 256 so each is seen several times, drawn by
:class:`~labkit.tasks.curriculum.PassRateSampler` with weight ``uniform``, ``failure`` (Kimi)
or ``variance``. Same seed, same budget. Reported: held-out accuracy (sampled, T = 1) before and
after, the share of zero-spread groups (``adv/frac_zero_std``: no gradient) and the training
batch's accuracy.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import torch

from labkit.algos.grpo import GRPOTrainer
from labkit.experiments.r1_zero import METRICS, SETUP, W_FORMAT, heldout
from labkit.models.policy import load_policy
from labkit.tasks import get_task
from labkit.tasks.curriculum import PassRateSampler

CLAIM = (
    "Kimi k1.5 (arXiv 2501.12599, sec. 2.3.4): sampling problems in proportion to their failure "
    "rate 1 - s_i (prioritized sampling) trains better than uniform sampling. On the toy: GRPO "
    "from tiny-think on a 256-prompt pool, uniform vs failure-weighted vs s(1 - s)-weighted "
    "draws, same seed and budget: held-out accuracy and the share of groups with no signal."
)
ARMS = ("uniform", "failure", "variance")
POOL = 256


def train(weight: str, steps: int, seed: int = 0, progress: bool = False, pool: int = POOL):
    """One GRPO run with prompts drawn by ``weight``: (trainer, sampler, seconds)."""
    t0 = time.perf_counter()
    sampler = PassRateSampler(get_task("scratchpad"), weight=weight, pool=pool, seed=seed)
    trainer = GRPOTrainer(
        "tiny-think",
        reward_funcs=["answer_match", "think_format", *METRICS],
        task=sampler,
        seed=seed,
        track_kl=False,
        run_name=f"lab97-{weight}",
        save_steps=0,
        **(SETUP | {"max_steps": steps, "reward_weights": [1.0, W_FORMAT] + [0.0] * len(METRICS)}),
    )
    trainer.algorithm = f"GRPO, {weight} sampling"
    trainer.train(progress=progress)
    return trainer, sampler, time.perf_counter() - t0


def run(
    fast: bool = False,
    seed: int = 0,
    steps: int | None = None,
    n_eval: int | None = None,
    progress: bool = True,
    pool: int = POOL,
) -> dict:
    """The three ``ARMS`` (full 60 steps, fast 4) on a pool of ``pool`` train prompts.
    Returns ``{"runs", "table", "config"}``."""
    torch.set_num_threads(1)
    steps, n_eval = steps or (4 if fast else 60), n_eval or (60 if fast else 400)
    before = heldout(*load_policy("tiny-think"), n=n_eval, seed=seed)
    runs, rows = {}, []
    for weight in ARMS:
        trainer, sampler, secs = train(weight, steps, seed, progress, pool)
        runs[weight] = trainer.log
        m = trainer.log.metrics
        after = heldout(trainer.model, trainer.tokenizer, n=n_eval, seed=seed)
        visits = np.array(list(sampler.seen.values()))
        rows.append(
            {
                "sampling": weight,
                "held-out before": before["accuracy"],
                "held-out after": after["accuracy"],
                "think after": after["think"],
                "zero-spread groups": m["adv/frac_zero_std"].mean(),
                "batch accuracy": m["accuracy"].mean(),
                "batch accuracy (last 10)": m["accuracy"].tail(10).mean(),
                "prompts never drawn": float((visits == 0).mean()),
                "seconds": secs,
            }
        )
    return {
        "runs": runs,
        "table": pd.DataFrame(rows).set_index("sampling"),
        "config": {"steps": steps, "seed": seed, "n_eval": n_eval, "pool": pool, **SETUP},
    }


def verdict(table: pd.DataFrame, n_eval: int) -> str:
    """Kimi's prioritized sampling against uniform: reproduced when its held-out accuracy is
    higher by more than two binomial standard errors; and whether s(1 - s) weighting left fewer
    zero-spread groups than uniform."""
    u, f = table.loc["uniform", "held-out after"], table.loc["failure", "held-out after"]
    se = np.sqrt((u * (1 - u) + f * (1 - f)) / n_eval)
    gain = f - u
    kimi = (
        "reproduced"
        if gain > 2 * se
        else "not reproduced: within noise"
        if abs(gain) <= 2 * se
        else "not reproduced: uniform did better"
    )
    z_u = table.loc["uniform", "zero-spread groups"]
    z_v = table.loc["variance", "zero-spread groups"]
    return (
        f"failure-weighted vs uniform: held-out {f:.3f} vs {u:.3f} "
        f"(gain {gain:+.3f}, 2 s.e. = {2 * se:.3f}): {kimi}. "
        f"s(1-s) weighting: zero-spread groups {z_v:.3f} vs uniform {z_u:.3f} "
        f"({'fewer' if z_v < z_u else 'not fewer'})."
    )
