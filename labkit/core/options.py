"""Every string option of labkit, its allowed values defined once, and the one check.

Configs (``labkit.algos.config``), the math (``labkit.core``) and the widgets take their
choices from here, so a new loss type or estimator is added in one place.

>>> choose("loss_type", "dapo", LOSS_TYPES)
'dapo'
>>> choose("loss_type", "ppo", LOSS_TYPES)
Traceback (most recent call last):
...
ValueError: loss_type='ppo' is not one of ('grpo', 'bnpo', 'dr_grpo', 'dapo', 'cispo', 'reinforce'); pick one of those.
"""

from __future__ import annotations

LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo", "cispo", "reinforce")
"""Token aggregation of the policy loss (``labkit.core.policy.token_weights``)."""
KL_ESTIMATORS = ("k1", "k2", "k3", "k3_st")
"""Per-token KL estimates (``labkit.core.kl``)."""
IS_LEVELS = ("token", "sequence")
"""Importance ratio per token (GRPO) or per sequence (GSPO)."""
SCALE_REWARDS = ("group", "batch", "none")
"""Std scaling of group advantages (TRL's ``scale_rewards``; ``none`` is Dr. GRPO)."""
ADVANTAGE_ESTIMATORS = ("grpo", "rloo", "reinforce", "reinforce_mean")
"""How the GRPO-family trainer turns rewards into advantages."""
STD_KINDS = ("unbiased", "population")
"""n-1 (TRL, torch) or n in the group std."""
BASELINES = ("none", "batch_mean", "group_mean", "leave_one_out")
"""REINFORCE baselines (``labkit.core.advantages.reinforce_advantages``)."""
DPO_LOSS_TYPES = ("sigmoid", "ipo")
"""Preference losses (``labkit.core.preference.dpo_loss``)."""
PAIR_MODES = ("correct_vs_incorrect", "long2short")
"""How preference pairs are built from rollouts (``labkit.algos.pairs``)."""
LR_SCHEDULES = ("linear", "constant", "cosine")
"""Learning-rate schedules after warm-up (``labkit.algos.base``)."""
RM_READOUTS = ("head", "head+logprob")
"""Reward-model readouts (``labkit.algos.reward_model.RewardModel``)."""
PRECISIONS = ("auto", "fp32", "bf16", "fp16")
"""Training precision (``labkit.models.device.choose_precision``; auto: by the hardware)."""
TIS_MODES = ("token_truncate", "token_mask", "sequence_truncate", "sequence_mask")
"""Truncated importance sampling of the sampler/trainer mismatch (``labkit.core.tis``; TRL's)."""

TRACKERS = ("tensorboard", "trackio")
"""Where a run's metrics and completions also go (``labkit.runs.trackers``; TRL's ``report_to``)."""

REWARD_RUNTIMES = ("auto", "process", "inline")
"""Where reward functions run (``labkit.rewards.runtime.RewardRunner``)."""
REWARD_ERRORS = ("raise", "skip")
"""What a failing or hanging reward function does to the step (``labkit.rewards.runtime``)."""
LAGRANGE_FORMS = ("linear", "hinge")
"""The multiplier's term: lam (c - L), the Lagrangian of E[c] <= L, or seed 002's hinge
lam max(0, c - L) (``labkit.core.lagrange``)."""


def choose(name: str, value: str, choices: tuple[str, ...]) -> str:
    """``value`` when it is one of ``choices``; else a ValueError naming the field and the fix."""
    if value not in choices:
        raise ValueError(f"{name}={value!r} is not one of {choices}; pick one of those.")
    return value


REJECTION_KEEPS = ("correct", "correct_think")
"""Which samples rejection sampling keeps (``labkit.algos.rejection``): verified-correct, or
verified-correct with a non-empty ``<think>`` (R1's "correct and well formed" traces)."""
SAMPLER_WEIGHTS = ("uniform", "failure", "variance", "easy-first")
"""How ``labkit.tasks.curriculum.PassRateSampler`` weighs a prompt by its pass rate s: equally,
1 - s (Kimi k1.5's prioritized sampling), or s (1 - s) (where a GRPO group has signal); or, by
its difficulty cell, easiest cells first (Kimi k1.5's curriculum sampling)."""
