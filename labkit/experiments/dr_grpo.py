"""Dr. GRPO's two biases: GRPO's 1/|o_i| lets wrong answers grow long; its 1/std up-weights
questions that are too easy or too hard.

Dr. GRPO (Liu et al. 2025, 2503.20783, sec. 3.1, eq. 2 vs 3): GRPO's loss is
    -1/G sum_i 1/|o_i| sum_t min(ratio_{i,t} A_i, clip(ratio_{i,t}) A_i),
    A_i = (r_i - mean(r)) / std(r)                                    (group z-score)
Dr. GRPO drops 1/|o_i| (a constant 1/(G L_max) instead: ``loss_type="dr_grpo"``) and std(r)
(``scale_rewards="none"``). With 1/|o_i| a long wrong answer's per-token penalty is diluted,
so "the length of incorrect responses keeps growing"; with 1/std a group with small reward
spread (nearly all right or all wrong) gets a larger advantage.

Two arms (GRPO, Dr. GRPO) on the same seeds (``EXPERIMENT``), each claim judged on the paired
difference over seeds (``labkit.experiments.claims``).

The setup, and why (departures from the paper):
- The ``tiny`` cold start answers 2-digit addition in 2-3 characters then stops: its length
  has nothing to drift from. We start from ``tiny-babble`` (``scripts/make_babble_checkpoint.py``):
  the same policy after a short SFT on its own greedy answers, 30 % of them followed by a space
  and random digits ("fails to stop"), so some of its samples ramble and a few hit the limit.
- The task is ``addition_ramble``: the leading integer is graded, what follows is ignored, so
  length is free of the reward, as for a reasoning trace, and only the loss can move it. On
  plain ``addition`` any extra character is wrong and both losses just learn to stop. Free of
  the reward also means the ramble is as likely after a right answer as after a wrong one:
  there are no "wrong and long" answers for 1/|o| to favour (the claim's note says so).
- Reward: ``leading_match`` (binary), so a group's accuracy is its reward spread.
- The tiny policy, G = 4, 16 prompts a step, lr 5e-4, mu = 2: a toy, not the paper's
  Qwen2.5 on MATH; the trend is read as the least-squares slope of a metric over steps.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from labkit.experiments.arms import grpo_run, tail_means
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, Outcome

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
"""The long-completion setup shared with lab 77 (``labkit.experiments.dapo``)."""
ARMS = {
    "GRPO": {"loss_type": "grpo", "scale_rewards": "group"},
    "Dr. GRPO": {"loss_type": "dr_grpo", "scale_rewards": "none"},
}
LENGTHS = ["len/incorrect", "len/correct", "len/truncated_frac"]
SLOPES = ["len/incorrect", "len/correct"]
SOURCE = "Liu et al. 2025, Dr. GRPO (2503.20783)"
NO_LONG_WRONG = (
    "addition_ramble's ramble is free of the reward and as likely after a right answer as "
    "after a wrong one, so there are no wrong-and-long answers for 1/|o| to favour; a "
    "policy whose rambling goes with its wrong answers is left to a later set-up."
)


def slope(metrics: pd.DataFrame, key: str) -> float:
    """Least-squares slope of ``key`` over ``step`` (per step), NaN steps skipped.

    >>> round(slope(pd.DataFrame({"step": [1, 2, 3], "m": [1.0, float("nan"), 2.0]}), "m"), 6)
    0.5
    """
    m = metrics[["step", key]].dropna()
    return float(np.polyfit(m["step"], m[key], 1)[0]) if len(m) > 1 else float("nan")


def std_bias(samples: pd.DataFrame) -> pd.DataFrame:
    """Mean |A_i| of a group by its accuracy k/G, from every sample of a run (groups with all
    answers equal have A = 0 and are left out), and each bin's share of the total |A|: the
    weight each kind of question gets in the gradient."""
    g = samples.groupby(["step", "group"]).agg(
        acc=("correct", "mean"), adv=("advantage", lambda a: a.abs().mean())
    )
    g = g[(g["acc"] > 0) & (g["acc"] < 1)]
    t = g.groupby("acc")["adv"].agg(["mean", "count"])
    t["share"] = t["mean"] * t["count"] / (t["mean"] * t["count"]).sum()
    return t.reset_index().rename(
        columns={
            "acc": "group accuracy",
            "mean": "mean |A|",
            "count": "groups",
            "share": "share of |A|",
        }
    )


def extremes_over_middle(table: pd.DataFrame) -> float:
    """mean |A| of the extreme bins (accuracy 1/G and (G-1)/G) over the middle bin(s) of a
    :func:`std_bias` table."""
    d = table.set_index("group accuracy")["mean |A|"]
    if len(d) < 3:
        return float("nan")
    lo, hi = d.index.min(), d.index.max()
    mid = d[(d.index > lo) & (d.index < hi)]
    return float(d[[lo, hi]].mean() / mid.mean())


def std_summary(samples: pd.DataFrame, G: int) -> dict:
    """The std bias of one run as summary scalars: mean |A| of the extreme groups over the
    middle ones, and mean |A| at each k of G right (named ``abs(A)``: a pipe would break the
    generated markdown tables)."""
    t = std_bias(samples)
    out = {"abs(A) extremes / middle": extremes_over_middle(t)}
    for k in range(1, G):
        row = t[np.isclose(t["group accuracy"], k / G)]
        out[f"mean abs(A), {k} of {G} right"] = float(row["mean |A|"].iloc[0]) if len(row) else None
    return out


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed: ``SETUP`` + the arm's loss on ``tiny-babble`` / ``addition_ramble``;
    summarised by each length's slope over steps and end level, and the std bias."""
    trainer = grpo_run(
        "tiny-babble",
        settings,
        seed=seed,
        steps=steps,
        run_name=run_name,
        tick=tick,
        task="addition_ramble",
        track_kl=False,
        save_steps=max(1, steps // 3),
        **SETUP,
    )
    m = trainer.log.metrics
    summary = {
        **{f"{k} slope": slope(m, k) for k in SLOPES},
        **tail_means(m, [*LENGTHS, "accuracy"]),
        **std_summary(trainer.log.samples, SETUP["num_generations"]),
    }
    return Outcome(summary, m)


def std_table(summaries: pd.DataFrame) -> pd.DataFrame:
    """Mean |A| by group accuracy per arm, averaged over seeds (the lab's bar chart).

    >>> s = pd.DataFrame({"arm": ["GRPO"] * 2, "mean abs(A), 1 of 2 right": [1.0, 0.5]})
    >>> std_table(s).to_dict("records")
    [{'group accuracy': 0.5, 'mean |A|': 0.75, 'run': 'GRPO'}]
    """
    cols = [c for c in summaries if c.startswith("mean abs(A), ")]
    rows = []
    for arm, d in summaries.groupby("arm", sort=False):
        for c in cols:
            k, G = (
                int(x) for x in c.removeprefix("mean abs(A), ").split(" right")[0].split(" of ")
            )
            rows.append({"group accuracy": k / G, "mean |A|": d[c].mean(), "run": arm})
    return pd.DataFrame(rows)


EXPERIMENT = Experiment(
    name="dr_grpo",
    lab="76_dr_grpo_length_bias",
    arms=ARMS,
    train=train,
    steps=150,
    fast_steps=4,
    curves=(*LENGTHS, "len/mean", "accuracy"),
    claims=(
        Claim(
            "length-grows",
            "under GRPO the length of incorrect responses keeps growing",
            f"{SOURCE} sec. 3.1",
            metric="len/incorrect slope",
            arm="GRPO",
            note=NO_LONG_WRONG,
        ),
        Claim(
            "length-vs-dr",
            "incorrect responses grow longer under GRPO than under Dr. GRPO",
            f"{SOURCE} sec. 3.1",
            metric="len/incorrect slope",
            arm="GRPO",
            baseline="Dr. GRPO",
            note=NO_LONG_WRONG,
        ),
        Claim(
            "std-bias",
            "the group std up-weights too-easy and too-hard questions",
            f"{SOURCE} sec. 3.1",
            metric="abs(A) extremes / middle",
            arm="GRPO",
            baseline="Dr. GRPO",
            note=(
                "with a binary reward mean |A| per group is a function of k and G alone, so "
                "the runs confirm the arithmetic (the same value on every seed), not a "
                "training effect"
            ),
        ),
    ),
    live={"arms": list(ARMS), "seeds": (0, 1), "steps": 150},
)
