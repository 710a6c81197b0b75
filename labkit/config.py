"""One dataclass per algorithm. Field names follow TRL where TRL has the concept.

Bad values are refused in ``__post_init__`` with a message that names the field and the fix,
before any work is done.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import ClassVar

LOSS_TYPES = ("grpo", "bnpo", "dr_grpo", "dapo", "cispo", "reinforce")
KL_ESTIMATORS = ("k1", "k2", "k3", "k3_st")
ADVANTAGE_ESTIMATORS = ("grpo", "rloo", "reinforce", "reinforce_mean")


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


@dataclass
class GRPOConfig:
    """Hyperparameters of a GRPO run (and its family, by ``loss_type``)."""

    num_generations: int = 16
    """G, completions sampled per prompt; advantages are relative within each group."""
    prompts_per_step: int = 16
    """Prompts per step; a step trains on prompts_per_step x num_generations completions."""
    max_completion_length: int | None = None
    """Tokens sampled at most per completion; None: what the task needs."""
    temperature: float = 1.0
    """Sampling temperature (also divides the logits when computing training log-probs)."""
    top_k: int = 0
    """Sample among the k most likely tokens only (0: off)."""
    top_p: float = 1.0
    """Nucleus sampling mass (1.0: off)."""
    truncated_logprobs: bool = False
    """Compute training log-probs under the sampling truncation: the top-k/top-p mask of each
    sampled token is kept and log pi renormalised over it (no effect without top_k/top_p)."""
    learning_rate: float = 1e-3
    """AdamW learning rate at the start of the schedule."""
    lr_scheduler_type: str = "linear"
    """'linear' decays to 0 at max_steps; 'constant' keeps it."""
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    """Gradient clipping by global norm (0: off)."""
    beta: float = 0.0
    """Weight of the KL(pi || pi_ref) penalty; > 0 keeps a frozen reference model."""
    kl_estimator: str = "k3"
    """Per-token KL estimate in the loss: 'k1', 'k2', 'k3' (GRPO's) or 'k3_st'."""
    epsilon: float = 0.2
    """Clip range below 1 (and above, unless epsilon_high is set)."""
    epsilon_high: float | None = None
    """Upper clip range (DAPO's clip-higher, e.g. 0.28); None: same as epsilon."""
    num_iterations: int = 1
    """mu, policy updates per sampled batch (GRPO's inner iterations)."""
    loss_type: str = "dapo"
    """Loss aggregation: 'grpo', 'bnpo', 'dr_grpo', 'dapo', 'cispo' or 'reinforce'."""
    scale_rewards: str = "group"
    """Advantage scaling: 'group' (z-score), 'batch' or 'none' (Dr. GRPO)."""
    importance_sampling_level: str = "token"
    """'token' (GRPO) or 'sequence' (GSPO)."""
    advantage_estimator: str = "grpo"
    """'grpo' (group z-score, by scale_rewards), 'rloo' (leave-one-out baseline), 'reinforce'
    (no baseline, A = r) or 'reinforce_mean' (batch-mean baseline)."""
    mask_truncated_completions: bool = False
    """Overlong filtering (DAPO): exclude completions that hit max_completion_length from the loss."""
    overlong_buffer: int = 0
    """L_cache of DAPO's soft overlong punishment (0: off): a completion longer than
    L_max - L_cache loses up to overlong_penalty, linearly, reaching it at L_max."""
    overlong_penalty: float = 1.0
    """The largest soft overlong punishment (DAPO: 1.0)."""
    dynamic_sampling: bool = False
    """DAPO's dynamic sampling: drop groups whose rewards all agree and sample more prompts."""
    max_sampling_rounds: int = 4
    """Rounds of sampling at most per step with dynamic_sampling (then train on what was kept)."""
    save_steps: int = 1
    """Write a checkpoint every save_steps steps when the run has a name (0: never)."""
    save_total_limit: int | None = 2
    """Checkpoints kept (oldest deleted first); None keeps all (to fork at any step)."""
    reward_weights: list[float] | None = None
    """One weight per reward function; None: all 1."""
    max_steps: int = 200
    seed: int = 0
    diagnostics: int = 4
    """Completions per step whose per-token log-prob, ratio, k1/k2/k3, advantage and weight are
    recorded for heatmaps (0: off)."""
    min_generations: ClassVar[int] = 2  # PPO needs no group: 1

    def __post_init__(self):
        _require(self.num_generations >= self.min_generations,
                 f"num_generations={self.num_generations}: group advantages need at least 2 "
                 "completions per prompt; use 2 or more (8-16 is usual)")
        _require(self.prompts_per_step >= 1, f"prompts_per_step={self.prompts_per_step}: use 1 or more")
        _require(self.max_completion_length is None or self.max_completion_length >= 1,
                 f"max_completion_length={self.max_completion_length}: use a positive number or None")
        _require(self.temperature >= 0, f"temperature={self.temperature}: use a value >= 0")
        _require(0 < self.top_p <= 1, f"top_p={self.top_p}: use a value in (0, 1]")
        _require(self.learning_rate > 0, f"learning_rate={self.learning_rate}: use a value > 0")
        _require(self.lr_scheduler_type in ("linear", "constant"),
                 f"lr_scheduler_type={self.lr_scheduler_type!r}: use 'linear' or 'constant'")
        _require(self.beta >= 0, f"beta={self.beta}: the KL weight cannot be negative; use 0 "
                 "(no reference model) or a small positive value such as 0.04")
        _require(self.kl_estimator in KL_ESTIMATORS,
                 f"kl_estimator={self.kl_estimator!r}: use one of {KL_ESTIMATORS}")
        _require(self.epsilon > 0, f"epsilon={self.epsilon}: use a value > 0, such as 0.2")
        _require(self.loss_type in LOSS_TYPES,
                 f"loss_type={self.loss_type!r}: use one of {LOSS_TYPES}")
        if self.epsilon_high is not None and self.loss_type != "cispo":
            _require(self.epsilon_high >= self.epsilon,
                     f"epsilon_high={self.epsilon_high} < epsilon={self.epsilon}: clip-higher "
                     "widens the upper range; set epsilon_high >= epsilon (DAPO: 0.28) or None")
        _require(self.loss_type != "cispo" or self.epsilon_high is not None,
                 "epsilon_high=None with loss_type='cispo': CISPO caps the IS weight at "
                 "epsilon_high (absolute, e.g. 5.0); set it")
        _require(self.num_iterations >= 1, f"num_iterations={self.num_iterations}: use 1 or more")
        _require(self.scale_rewards in ("group", "batch", "none"),
                 f"scale_rewards={self.scale_rewards!r}: use 'group', 'batch' or 'none'")
        _require(self.importance_sampling_level in ("token", "sequence"),
                 f"importance_sampling_level={self.importance_sampling_level!r}: use 'token' or "
                 "'sequence'")
        _require(self.advantage_estimator in ADVANTAGE_ESTIMATORS,
                 f"advantage_estimator={self.advantage_estimator!r}: use one of "
                 f"{ADVANTAGE_ESTIMATORS}")
        _require(self.overlong_buffer >= 0, f"overlong_buffer={self.overlong_buffer}: use 0 (off) "
                 "or a positive number of tokens below max_completion_length")
        _require(self.overlong_buffer == 0 or (self.max_completion_length or 0) > self.overlong_buffer,
                 f"overlong_buffer={self.overlong_buffer} needs max_completion_length > "
                 f"overlong_buffer (it is {self.max_completion_length}): set both")
        _require(self.overlong_penalty >= 0, f"overlong_penalty={self.overlong_penalty}: use >= 0")
        _require(self.max_sampling_rounds >= 1,
                 f"max_sampling_rounds={self.max_sampling_rounds}: use 1 or more")
        _require(self.save_steps >= 0, f"save_steps={self.save_steps}: use 0 (off) or more")
        _require(self.save_total_limit is None or self.save_total_limit >= 1,
                 f"save_total_limit={self.save_total_limit}: use 1 or more, or None (keep all)")
        _require(self.max_steps >= 1, f"max_steps={self.max_steps}: use 1 or more")
        _require(self.diagnostics >= 0, f"diagnostics={self.diagnostics}: use 0 or more")

    def to_dict(self) -> dict:
        return asdict(self)
