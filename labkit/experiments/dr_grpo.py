"""Dr. GRPO's two biases: GRPO's 1/|o_i| lets wrong answers grow long; its 1/std up-weights
questions that are too easy or too hard.

Dr. GRPO (Liu et al. 2025, 2503.20783, eq. 2 vs 3): GRPO's loss is
    -1/G sum_i 1/|o_i| sum_t min(ratio_{i,t} A_i, clip(ratio_{i,t}) A_i),
    A_i = (r_i - mean(r)) / std(r)                                    (group z-score)
Dr. GRPO drops 1/|o_i| (a constant 1/(G L_max) instead: ``loss_type="dr_grpo"``) and std(r)
(``scale_rewards="none"``). With 1/|o_i| a long wrong answer's per-token penalty is diluted,
so "the length of incorrect responses keeps growing"; with 1/std a group with small reward
spread (nearly all right or all wrong) gets a larger advantage.

The setup, and why (departures from the paper):
- The ``tiny`` cold start answers 2-digit addition in 2-3 characters then stops: at
  temperature 1, 0 of 512 held-out samples ran past 4 tokens of a 16-token budget (1.2 % at
  temperature 1.6), so its length has nothing to drift from. We start from ``tiny-babble`` (``scripts/make_babble_checkpoint.py``):
  the same policy after a short SFT on its own greedy answers, 30 % of them followed by a space
  and random digits ("fails to stop"). About a quarter of its samples ramble, 5 % hit the
  16-token limit.
- The task is ``addition_ramble``: the leading integer is graded, what follows is ignored, so
  length is free of the reward, as for a reasoning trace, and only the loss can move it. On
  plain ``addition`` any extra character is wrong and both losses just learn to stop.
- Reward: ``leading_match`` (binary), so a group's accuracy is its reward spread.
- The tiny policy, G = 4, 16 prompts a step, lr 5e-4, mu = 2: a toy, not the paper's
  Qwen2.5 on MATH; the trend is read as the least-squares slope of a metric over steps.
"""

from __future__ import annotations

import re
import time

import numpy as np
import pandas as pd

from labkit.algos.grpo import GRPOTrainer

CLAIM = (
    "Dr. GRPO (Liu et al. 2025, arXiv 2503.20783): GRPO's per-response length normalisation "
    "1/|o_i| dilutes the per-token penalty of a long wrong answer, so under GRPO the length of "
    "incorrect responses keeps growing; with a constant normaliser (loss_type='dr_grpo') and "
    "no std scaling (scale_rewards='none') it does not. The group std in the advantage "
    "up-weights questions that are too easy or too hard (small reward spread)."
)
SETUP = {
    "reward_funcs": ["leading_match"],
    "learning_rate": 5e-4,
    "num_iterations": 2,
    "num_generations": 4,
    "prompts_per_step": 16,
    "beta": 0.0,
    "max_completion_length": 16,
}
"""The long-completion setup shared with labs 77 (``labkit.experiments.dapo``)."""
VARIANTS = {
    "grpo": {"loss_type": "grpo", "scale_rewards": "group"},
    "dr_grpo": {"loss_type": "dr_grpo", "scale_rewards": "none"},
}
LENGTHS = ["len/incorrect", "len/correct", "len/mean", "len/truncated_frac"]


def train(
    name: str, steps: int, seed: int = 0, progress: bool = False, prefix: str = "lab76-", **config
):
    """One run of ``SETUP`` + ``config`` on ``tiny-babble`` / ``addition_ramble``:
    (trainer, seconds). Its log ``trainer.log`` is written to ``runs/<prefix><slug of name>``
    (no checkpoints), so ``lk.compare_runs`` labels it by ``name``."""
    t0 = time.perf_counter()
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    trainer = GRPOTrainer(
        "tiny-babble",
        task="addition_ramble",
        seed=seed,
        track_kl=False,
        run_name=prefix + slug,
        save_steps=0,
        **(SETUP | {"max_steps": steps} | config),
    )
    trainer.algorithm = name  # the progress bar's label
    trainer.train(progress=progress)
    return trainer, time.perf_counter() - t0


def slope(metrics: pd.DataFrame, key: str) -> float:
    """Least-squares slope of ``key`` over ``step`` (per step), NaN steps skipped.

    >>> round(slope(pd.DataFrame({"step": [1, 2, 3], "m": [1.0, float("nan"), 2.0]}), "m"), 6)
    0.5
    """
    m = metrics[["step", key]].dropna()
    return float(np.polyfit(m["step"], m[key], 1)[0]) if len(m) > 1 else float("nan")


def run(fast: bool = False, seed: int = 0, steps: int | None = None, progress: bool = True) -> dict:
    """GRPO and Dr. GRPO from the same policy, seed and budget (full 150 steps, fast 20).

    Returns ``{"runs": {name: RunLog}, "lengths": DataFrame (slopes), "std_bias": DataFrame,
    "config": dict}``.
    """
    steps = steps or (20 if fast else 150)
    runs, secs = {}, {}
    for name, cfg in VARIANTS.items():
        trainer, secs[name] = train(name, steps, seed, progress, **cfg)
        runs[name] = trainer.log
    return {
        "runs": runs,
        "lengths": length_table(runs, secs),
        "std_bias": std_bias(runs),
        "config": {"steps": steps, "seed": seed, **SETUP},
    }


def length_table(runs: dict, secs: dict | None = None) -> pd.DataFrame:
    """One row per run: the slope over steps of each length metric, its first and last-10%
    values, and the final accuracy (mean of the last 10% of steps)."""
    rows = []
    for name, log in runs.items():
        m = log.metrics
        tail = m.iloc[-max(1, len(m) // 10) :]
        row = {"run": name}
        for k in LENGTHS:
            row[f"{k} slope"] = slope(m, k)
            row[f"{k} first"], row[f"{k} last"] = float(m[k].iloc[0]), float(tail[k].mean())
        row["accuracy last"] = float(tail["accuracy"].mean())
        row["seconds"] = (secs or {}).get(name, float("nan"))
        rows.append(row)
    return pd.DataFrame(rows).set_index("run")


def std_bias(runs: dict) -> pd.DataFrame:
    """Mean |A_i| of a group by its accuracy k/G, from every sample of each run (groups with
    all answers equal have A = 0 and are left out), and each bin's share of the total |A|:
    the weight each kind of question gets in the gradient."""
    out = []
    for name, log in runs.items():
        s = log.samples
        g = s.groupby(["step", "group"]).agg(
            acc=("correct", "mean"), adv=("advantage", lambda a: a.abs().mean())
        )
        g = g[(g["acc"] > 0) & (g["acc"] < 1)]
        t = g.groupby("acc")["adv"].agg(["mean", "count"])
        t["share"] = t["mean"] * t["count"] / (t["mean"] * t["count"]).sum()
        out.append(t.assign(run=name).reset_index())
    df = pd.concat(out, ignore_index=True)
    return df.rename(
        columns={
            "acc": "group accuracy",
            "mean": "mean |A|",
            "count": "groups",
            "share": "share of |A|",
        }
    )


def extremes_over_middle(std: pd.DataFrame, run: str) -> float:
    """mean |A| of the extreme bins (accuracy 1/G and (G-1)/G) over the middle bin(s)."""
    d = std[std["run"] == run].set_index("group accuracy")["mean |A|"]
    lo, hi = d.index.min(), d.index.max()
    mid = d[(d.index > lo) & (d.index < hi)]
    return float(d[[lo, hi]].mean() / mid.mean()) if len(mid) else float("nan")


def verdict(results: dict) -> str:
    """Plain words with the numbers, for both claims."""
    t, std = results["lengths"], results["std_bias"]
    g, d = t.loc["grpo", "len/incorrect slope"], t.loc["dr_grpo", "len/incorrect slope"]
    long_ok = g > 0 and g > d
    eg, ed = extremes_over_middle(std, "grpo"), extremes_over_middle(std, "dr_grpo")
    std_ok = eg > 1.05 * ed
    return "\n".join(
        [
            (
                f"slope of len/incorrect over steps: GRPO {g:+.4f}, Dr. GRPO {d:+.4f} tokens/step "
                f"(len/incorrect {t.loc['grpo', 'len/incorrect first']:.2f} -> "
                f"{t.loc['grpo', 'len/incorrect last']:.2f} under GRPO, "
                f"{t.loc['dr_grpo', 'len/incorrect first']:.2f} -> "
                f"{t.loc['dr_grpo', 'len/incorrect last']:.2f} under Dr. GRPO)."
            ),
            (
                "REPRODUCED (length): incorrect answers grow longer under GRPO than under Dr. GRPO."
                if long_ok
                else "NOT REPRODUCED (length): incorrect answers do not grow longer under "
                "GRPO than under Dr. GRPO on this toy."
            ),
            (
                f"mean |A| of the extreme groups (1 or G-1 right) over the middle ones: "
                f"{eg:.2f} with std scaling (GRPO), {ed:.2f} without (Dr. GRPO)."
            ),
            (
                "REPRODUCED (std): group std scaling up-weights too-easy and too-hard questions."
                if std_ok
                else "NOT REPRODUCED (std): std scaling does not up-weight the extremes."
            ),
        ]
    )
