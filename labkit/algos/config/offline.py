"""The configs of offline training, on pairs or examples drawn with replacement: DPO, the
Bradley-Terry reward model and SFT, on :class:`PairsConfig`.

>>> DPOConfig(beta=0)
Traceback (most recent call last):
...
ValueError: beta=0: DPO's beta must be > 0 (0.1 is usual)
"""

from __future__ import annotations

from dataclasses import dataclass

from labkit.algos.config.base import TrainConfig, at_least, check_ref_sync, require
from labkit.core import options as opt
from labkit.core.options import choose


@dataclass
class PairsConfig(TrainConfig):
    """Training on pairs or examples drawn with replacement, ``batch_size`` a step."""

    batch_size: int = 32
    """Pairs (or examples) per step."""

    def __post_init__(self):
        super().__post_init__()
        at_least(self, 1, "batch_size")


@dataclass
class DPOConfig(PairsConfig):
    """Hyperparameters of DPO (TRL's names)."""

    learning_rate: float = 3e-5
    """AdamW's; on the tiny policy 5e-5 already pushes both log-probs down and collapses it."""
    lr_scheduler_type: str = "constant"
    """DPO keeps its learning rate."""
    max_steps: int = 100
    """Optimisation steps of the run."""
    beta: float = 0.1
    """Strength of the implicit KL to pi_ref (the temperature of the implicit reward)."""
    sync_ref_model: bool = False
    """TR-DPO (2404.09656): refresh pi_ref from pi_theta every ref_model_sync_steps steps
    (``labkit.models.reference``); needs a pi_ref of its own (full fine-tuning, not LoRA)."""
    ref_model_mixup_alpha: float = 0.6
    """alpha of the refresh theta_ref <- alpha theta + (1 - alpha) theta_ref (1: a hard update,
    pi_ref := pi_theta)."""
    ref_model_sync_steps: int = 512
    """tau, optimizer steps between refreshes of pi_ref."""
    loss_type: str = "sigmoid"
    """'sigmoid' (DPO) or 'ipo'."""
    pair_mode: str = "correct_vs_incorrect"
    """How pairs are built from rollouts when none are given: or 'long2short'."""
    pair_prompts: int = 512
    """Training prompts sampled to build pairs (when none are given)."""
    num_generations: int = 8
    """Completions per prompt when building pairs."""
    max_completion_length: int | None = None
    """Tokens sampled at most per completion when building pairs; None: what the task needs
    (its answer's or its whole completion's length, + eos)."""

    def __post_init__(self):
        super().__post_init__()
        require(self.beta > 0, f"beta={self.beta}: DPO's beta must be > 0 (0.1 is usual)")
        check_ref_sync(self)
        require(
            self.max_completion_length is None or self.max_completion_length >= 1,
            f"max_completion_length={self.max_completion_length}: use a positive number or None",
        )
        choose("loss_type", self.loss_type, opt.DPO_LOSS_TYPES)
        choose("pair_mode", self.pair_mode, opt.PAIR_MODES)
        require(
            self.num_generations >= 2,
            f"num_generations={self.num_generations}: pairs need at least 2 completions per prompt",
        )


@dataclass
class RewardModelConfig(PairsConfig):
    """Hyperparameters of Bradley-Terry reward-model training."""

    learning_rate: float = 3e-4
    """AdamW learning rate at the peak of the schedule."""
    lr_scheduler_type: str = "constant"
    """After warm-up: 'constant', 'cosine' (to 0 at max_steps) or 'linear'."""
    eval_every: int = 20
    """Steps between held-out evaluations (when held-out pairs are given)."""

    def __post_init__(self):
        super().__post_init__()
        at_least(self, 1, "eval_every")


@dataclass
class SFTConfig(PairsConfig):
    """Supervised fine-tuning: cross-entropy on the completion tokens of (prompt, target) pairs."""

    learning_rate: float = 3e-3
    """AdamW learning rate after warm-up."""
    lr_scheduler_type: str = "constant"
    """After warm-up the learning rate stays."""
    warmup_steps: int = 20
    """Linear warm-up of the learning rate over this many steps."""
    max_grad_norm: float = 0.0
    """No clipping by default (the cold start of the shipped checkpoint had none)."""
    batch_size: int = 128
    """(prompt, target) pairs per step."""
    max_steps: int = 1000
    """Optimisation steps of the run."""


@dataclass
class VerifierConfig(PairsConfig):
    """A process or outcome verifier (``labkit.algos.verifier``) fitted with binary
    cross-entropy on (prompt, completion) pairs whose step labels are known."""

    learning_rate: float = 3e-4
    """AdamW learning rate of the trunk (a copy of the policy)."""
    head_learning_rate: float = 1e-2
    """AdamW learning rate of the fresh head and alpha (few parameters, from scratch)."""
    lr_scheduler_type: str = "constant"
    """The learning rates stay."""
    weight_decay: float = 0.01
    """AdamW's decoupled weight decay (torch's default)."""
    batch_size: int = 64
    """(prompt, completion) pairs per step."""

    def __post_init__(self):
        super().__post_init__()
        require(
            self.head_learning_rate > 0,
            f"head_learning_rate={self.head_learning_rate}: use a value > 0",
        )
