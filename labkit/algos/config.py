"""Every algorithm's config, one dataclass each. Field names follow TRL where TRL has the concept.

Bad values are refused in ``__post_init__`` with a message that names the field and the fix,
before any work is done; string options take their allowed values from
:mod:`labkit.core.options`. ``docs/CONFIG.md`` is the table of every field (made by
``scripts/config_table.py``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import ClassVar

from labkit.core.options import (
    ADVANTAGE_ESTIMATORS,
    DPO_LOSS_TYPES,
    KL_ESTIMATORS,
    LOSS_TYPES,
    PAIR_MODES,
)


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


@dataclass
class PPOConfig(GRPOConfig):
    """PPO's hyperparameters on top of the sampling/optimiser ones of :class:`GRPOConfig`."""

    num_generations: int = 4
    """Completions per prompt (PPO needs no group; 1 is allowed)."""
    loss_type: str = "bnpo"
    """Token mean over the minibatch (TRL's PPO masked_mean)."""
    beta: float = 0.05
    """KL coefficient (InstructGPT's beta): in the reward per token, or in the loss."""
    kl_estimator: str = "k1"
    """Per-token KL estimate: k1 = log pi_old - log pi_ref in the reward (InstructGPT)."""
    kl_in_reward: bool = True
    """True: r_t -= beta KL_t (PPO for LLMs); False: beta KL in the loss (GRPO style)."""
    value_head: bool = True
    """A scalar head V(s_t) on the policy. PPO cannot run without it."""
    gamma: float = 1.0
    """Discount per token."""
    lam: float = 0.95
    """GAE lambda in [0, 1]: 0 is the one-step TD error, 1 the Monte-Carlo return."""
    vf_coef: float = 0.1
    """Weight of the value loss."""
    value_learning_rate: float | None = 3e-3
    """Learning rate of the (fresh, zero-initialised) value head; None: learning_rate."""
    cliprange_value: float | None = 0.2
    """Value clipping around V_old (None: off)."""
    whiten_advantages: bool = True
    """Normalise A_t over the batch's valid tokens."""
    ppo_epochs: int = 2
    """Passes over each sampled batch."""
    num_mini_batches: int = 2
    """Minibatches per epoch; must divide prompts_per_step x num_generations."""
    min_generations: ClassVar[int] = 1

    def __post_init__(self):
        super().__post_init__()
        _require(self.value_head, "value_head=False: PPO's advantages come from a critic; keep "
                 "value_head=True, or train without a critic with GRPOTrainer (GRPO, RLOO)")
        _require(0 <= self.lam <= 1, f"lam={self.lam}: GAE's lambda must be in [0, 1]")
        _require(0 <= self.gamma <= 1, f"gamma={self.gamma}: the discount must be in [0, 1]")
        _require(self.vf_coef >= 0, f"vf_coef={self.vf_coef}: use a value >= 0 (0.1 is usual)")
        _require(self.cliprange_value is None or self.cliprange_value > 0,
                 f"cliprange_value={self.cliprange_value}: use a value > 0 or None (off)")
        _require(self.value_learning_rate is None or self.value_learning_rate > 0,
                 f"value_learning_rate={self.value_learning_rate}: use a value > 0 or None")
        _require(self.ppo_epochs >= 1, f"ppo_epochs={self.ppo_epochs}: use 1 or more")
        B = self.prompts_per_step * self.num_generations
        _require(self.num_mini_batches >= 1 and B % self.num_mini_batches == 0,
                 f"num_mini_batches={self.num_mini_batches} does not divide the batch of "
                 f"prompts_per_step x num_generations = {B}: pick a divisor of {B}")


@dataclass
class DPOConfig:
    """Hyperparameters of DPO (TRL's names)."""

    beta: float = 0.1
    """Strength of the implicit KL to pi_ref (the temperature of the implicit reward)."""
    loss_type: str = "sigmoid"
    """'sigmoid' (DPO) or 'ipo'."""
    learning_rate: float = 3e-5
    """AdamW's; on the tiny policy 5e-5 already pushes both log-probs down and collapses it."""
    batch_size: int = 32
    """Pairs per step."""
    max_steps: int = 100
    max_grad_norm: float = 1.0
    pair_mode: str = "correct_vs_incorrect"
    """How pairs are built from rollouts when none are given: or 'long2short'."""
    pair_prompts: int = 512
    """Training prompts sampled to build pairs (when none are given)."""
    num_generations: int = 8
    """Completions per prompt when building pairs."""
    seed: int = 0
    save_steps: int = 1
    """Write a checkpoint every save_steps steps when the run has a name (0: never)."""
    save_total_limit: int | None = 2
    """Checkpoints kept (oldest deleted first); None keeps all (to fork at any step)."""

    def __post_init__(self):
        _require(self.beta > 0, f"beta={self.beta}: DPO's beta must be > 0 (0.1 is usual)")
        _require(self.loss_type in DPO_LOSS_TYPES,
                 f"loss_type={self.loss_type!r}: use one of {DPO_LOSS_TYPES}")
        _require(self.learning_rate > 0, f"learning_rate={self.learning_rate}: use a value > 0")
        _require(self.batch_size >= 1, f"batch_size={self.batch_size}: use 1 or more")
        _require(self.max_steps >= 1, f"max_steps={self.max_steps}: use 1 or more")
        _require(self.pair_mode in PAIR_MODES, f"pair_mode={self.pair_mode!r}: use one of "
                 f"{PAIR_MODES}")
        _require(self.num_generations >= 2, f"num_generations={self.num_generations}: pairs "
                 "need at least 2 completions per prompt")
        _require(self.save_steps >= 0, f"save_steps={self.save_steps}: use 0 (off) or more")
        _require(self.save_total_limit is None or self.save_total_limit >= 1,
                 f"save_total_limit={self.save_total_limit}: use 1 or more, or None (keep all)")

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class RewardModelConfig:
    """Hyperparameters of reward-model training."""

    learning_rate: float = 3e-4
    batch_size: int = 32
    """Pairs per step."""
    max_steps: int = 200
    max_grad_norm: float = 1.0
    warmup_steps: int = 0
    """Linear warm-up of the learning rate over this many steps."""
    lr_schedule: str = "constant"
    """After warm-up: ``"constant"`` or ``"cosine"`` (decays to 0 at ``max_steps``)."""
    weight_decay: float = 0.0
    eval_every: int = 20
    """Steps between held-out evaluations (when held-out pairs are given)."""
    seed: int = 0

    def __post_init__(self):
        _require(self.learning_rate > 0, f"learning_rate={self.learning_rate}: use a value > 0")
        _require(self.batch_size >= 1, f"batch_size={self.batch_size}: use 1 or more")
        _require(self.max_steps >= 1, f"max_steps={self.max_steps}: use 1 or more")
        _require(0 <= self.warmup_steps < self.max_steps,
                 f"warmup_steps={self.warmup_steps}: use 0 <= warmup_steps < max_steps")
        _require(self.lr_schedule in ("constant", "cosine"),
                 f"lr_schedule={self.lr_schedule!r}: use 'constant' or 'cosine'")
        _require(self.weight_decay >= 0, f"weight_decay={self.weight_decay}: use a value >= 0")
        _require(self.eval_every >= 1, f"eval_every={self.eval_every}: use 1 or more")

    def to_dict(self) -> dict:
        return asdict(self)
