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
  has nothing to drift from. We start from ``tiny-babble-wrong``
  (``scripts/make_babble_checkpoint.py --wrong-babble 0.6 --babble 0.05 --temperature 1
  --hesitate``): the same policy after a short SFT on its own sampled answers, where a leading
  space, then the answer, then a space and random digits ("fails to stop") is the form of most
  WRONG answers and few right ones, so that at the cold start a long answer is mostly a wrong
  one (its card, ``labkit_card.json``, gives P(long | wrong) and P(long | right);
  ``tests/test_experiments_dr_grpo.py`` checks the gap). The policy picks that "unsure" mode
  with its first token, before its answer: a tail after wrong answers alone was not learnable
  (the tiny policy cannot tell its answer is wrong; it rambled as often after right ones).
- Why that set-up lets the effect happen: the paper's mechanism acts within a group. A wrong
  answer has A < 0 and GRPO spreads its penalty over its |o_i| tokens, so the decision to stop
  after a wrong answer is pushed down harder when the answer is short than the decision to
  ramble when it is long: the unsure mode's long wrong answers are punished least per token,
  the short wrong answers of the confident mode most, so among wrong answers the long ones gain. The previous cold
  start, ``tiny-babble``, rambled as often after a right answer as after a wrong one: the
  stop-or-ramble decision could not depend on correctness, so the push on it from right and
  wrong answers cancelled and there were no wrong-and-long answers for 1/|o| to favour (a toy
  in which the effect could not happen). Under Dr. GRPO every token of every answer gets the
  same weight |A_i| / (G L_max), so the length of an answer does not soften its penalty.
- What would falsify it: on this set-up, where long wrong answers exist from step 0 and their
  length is free of the reward, GRPO's wrong answers not growing (slope <= 0), or not growing
  more than Dr. GRPO's (paired difference <= 0).
- The task is ``addition_ramble``: the leading integer is graded, what follows is ignored, so
  an answer's tail is free of the reward, as a reasoning trace's length is; on plain
  ``addition`` any extra character is wrong and both losses just learn to stop.
- Truncation scored 0: a completion that reaches ``max_completion_length`` (16) tokens without
  eos gets reward 0 (``labkit.rewards.truncation.TruncatedZero`` around ``leading_match``, and
  the trainer's verifier is that reward, so ``len/incorrect`` counts it as wrong), as an
  R1-Zero run scores an answer that never finished. It stays in the loss (not DAPO's
  ``mask_truncated_completions``, which would drop it) with A < 0 in a mixed group: the
  longest wrong answers, the ones GRPO's 1/|o| dilutes most.
- Reward: binary, so a group's accuracy is its reward spread (the std bias below).
- The tiny policy, G = 4, 16 prompts a step, lr 5e-4, mu = 2: a toy, not the paper's
  Qwen2.5 on MATH; the trend is read as the least-squares slope of a metric over steps.

Timing pilot (one thread, the shared 2-core machine, 2026-11-27): GRPO on seed 0 from
``tiny-babble-wrong``, 3 full-mode steps: 2.1 s (0.64 s the first step, 0.48-0.49 s the next).
At ~0.6 s a step (lengths may grow: the earlier set-up's stored run took 1930 s for the same
10 runs), 2 arms x 5 seeds x 150 steps ~ 900-1300 s of one-thread work, ~8-11 min on 2
workers.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from labkit.experiments.arms import grpo_run, tail_means
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, Outcome
from labkit.models.policy import char_tokenizer
from labkit.rewards.truncation import TruncatedZero

CLAIM = (
    "Dr. GRPO (Liu et al. 2025, arXiv 2503.20783): GRPO's per-response length normalisation "
    "1/|o_i| dilutes the per-token penalty of a long wrong answer, so under GRPO the length of "
    "incorrect responses keeps growing; with a constant normaliser (loss_type='dr_grpo') and "
    "no std scaling (scale_rewards='none') it does not. The group std in the advantage "
    "up-weights questions that are too easy or too hard (small reward spread)."
)
MODEL = "tiny-babble-wrong"
"""The cold start whose rambling goes with its wrong answers (``scripts/make_babble_checkpoint.py``)."""
SETUP = {
    "reward_funcs": ["leading_match"],
    "learning_rate": 5e-4,
    "num_iterations": 2,
    "num_generations": 4,
    "prompts_per_step": 16,
    "beta": 0.0,
    "max_completion_length": 16,
}
"""The long-completion setup shared with lab 77 (``labkit.experiments.dapo``, on ``tiny-babble``
with ``leading_match``); this experiment scores truncation 0 on top of it (:func:`reward`)."""
ARMS = {
    "GRPO": {"loss_type": "grpo", "scale_rewards": "group"},
    "Dr. GRPO": {"loss_type": "dr_grpo", "scale_rewards": "none"},
}
LENGTHS = ["len/incorrect", "len/correct", "len/truncated_frac"]
SLOPES = ["len/incorrect", "len/correct"]
SOURCE = "Liu et al. 2025, Dr. GRPO (2503.20783)"
WHY = (
    "the cold start rambles mostly after its wrong answers (tiny-babble-wrong's card), and a "
    "truncated answer scores 0, so there are wrong-and-long answers for 1/|o| to favour"
)


def reward(max_len: int = SETUP["max_completion_length"]) -> TruncatedZero:
    """``leading_match``, 0 for a completion truncated at ``max_len`` tokens (the tiny
    family's eos); named ``leading_match_ended``, the trainer's verifier."""
    return TruncatedZero("leading_match", max_len, char_tokenizer().eos_token_id)


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
    """One arm on one seed: ``SETUP`` + the arm's loss on ``MODEL`` / ``addition_ramble``, the
    truncation-0 :func:`reward` deciding what is correct; summarised by each length's slope over
    steps and end level, and the std bias."""
    r = reward()
    trainer = grpo_run(
        MODEL,
        settings,
        seed=seed,
        steps=steps,
        run_name=run_name,
        tick=tick,
        task="addition_ramble",
        track_kl=False,
        save_steps=max(1, steps // 3),
        **(SETUP | {"reward_funcs": [r], "verifier": r.__name__}),
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
            note=WHY,
        ),
        Claim(
            "length-vs-dr",
            "incorrect responses grow longer under GRPO than under Dr. GRPO",
            f"{SOURCE} sec. 3.1",
            metric="len/incorrect slope",
            arm="GRPO",
            baseline="Dr. GRPO",
            note=WHY,
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
