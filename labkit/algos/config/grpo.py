"""GRPO's config (and its family's, by ``loss_type``) and the multi-turn variant's.

>>> GRPOConfig(num_generations=1)
Traceback (most recent call last):
...
ValueError: num_generations=1: group advantages need at least 2 completions per prompt; use 2 or more (8-16 is usual)
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar

from labkit.algos.config.base import TrainConfig, at_least, check_ref_sync, require
from labkit.core import options as opt
from labkit.core.options import choose


@dataclass
class GRPOConfig(TrainConfig):
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
    beta: float = 0.0
    """Weight of the KL(pi || pi_ref) penalty; > 0 keeps a frozen reference model."""
    kl_estimator: str = "k3"
    """Per-token KL estimate in the loss: 'k1', 'k2', 'k3' (GRPO's) or 'k3_st'."""
    sync_ref_model: bool = False
    """TR-DPO (2404.09656): refresh pi_ref from pi_theta every ref_model_sync_steps steps
    (``labkit.models.reference``); needs a pi_ref of its own (full fine-tuning, not LoRA)."""
    ref_model_mixup_alpha: float = 0.6
    """alpha of the refresh theta_ref <- alpha theta + (1 - alpha) theta_ref (1: a hard update,
    pi_ref := pi_theta)."""
    ref_model_sync_steps: int = 512
    """tau, steps between refreshes of pi_ref; a step makes num_iterations optimizer steps,
    which TRL counts (TRL's value is this x num_iterations)."""
    epsilon: float = 0.2
    """Clip range below 1 (and above, unless epsilon_high is set)."""
    epsilon_high: float | None = None
    """Upper clip range (DAPO's clip-higher, e.g. 0.28); None: same as epsilon. CISPO: an
    absolute cap on the IS weight (e.g. 5.0)."""
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
    reward_weights: list[float] | None = None
    """One weight per reward function; None: all 1."""
    diagnostics: int = 4
    """Completions per step whose per-token log-prob, ratio, k1/k2/k3, advantage and weight are
    recorded for heatmaps (0: off)."""
    entropy_coef: float = 0.0
    """c_H, entropy bonus: the loss becomes loss - c_H * masked mean entropy of the current
    policy (PPO's total loss, 1707.06347 eq. 9; 0: off, as in GRPO and DAPO)."""
    off_policy_mask: float | None = None
    """delta of DeepSeek-V3.2's off-policy sequence masking (2512.02556): drop from the policy
    term a sequence with A_i < 0 and (1/|o_i|) sum_t log(pi_old / pi_theta) > delta (None: off)."""
    reward_timeout: float = 30.0
    """Seconds a reward function may take on one batch; past it its worker process is killed."""
    reward_runtime: str = "auto"
    """'auto' (built-ins inline, others in a worker process), 'process' or 'inline' (no limit)."""
    reward_workers: int = 1
    """Worker processes per reward function (>1 splits the batch: CPU-heavy rewards)."""
    reward_errors: str = "raise"
    """On a failing or hanging reward: 'raise' (step stops) or 'skip' (None, event logged)."""
    tis_cap: float | None = None
    """C of truncated importance sampling (Yao et al. 2025; TRL's
    vllm_importance_sampling_clip_max): each token's policy loss times min(pi_train_old /
    pi_sample, C), for the sampler/trainer mismatch (low precision, another engine); None: off
    (TRL uses 3.0, on vLLM generations only)."""
    tis_mode: str = "token_truncate"
    """TIS weight per 'token' or per 'sequence', above C 'truncate'd to C or 'mask'ed to 0
    (TRL's vllm_importance_sampling_mode values)."""
    skip_zero_advantage: bool = False
    """Forward and backward only the rows with a nonzero advantage (and the first
    ``diagnostics``), the loss rescaled to the whole batch's normalisation: a row with A = 0
    adds nothing to the policy gradient, so the gradient is the same. Applied only where that
    holds: beta = 0, entropy_coef = 0 (their terms reach every row), no top-k/top-p, no dynamic
    sampling; otherwise every row trains (``train/rows_frac`` = 1). Entropy and KL to pi_ref
    are then read from the sampler; ratio and kl/old describe the rows that trained."""
    min_generations: ClassVar[int] = 2  # PPO needs no group: 1

    def __post_init__(self):
        super().__post_init__()
        self._check_sampling()
        self._check_loss()
        self._check_dapo()
        at_least(self, 0, "diagnostics", "top_k", "overlong_buffer")
        at_least(self, 1, "prompts_per_step", "num_iterations", "max_sampling_rounds")
        at_least(self, 0, "entropy_coef")
        require(
            self.off_policy_mask is None or self.off_policy_mask >= 0,
            f"off_policy_mask={self.off_policy_mask}: use a threshold >= 0 (e.g. 0.1) or None",
        )
        at_least(self, 1, "reward_workers")
        require(self.reward_timeout > 0, f"reward_timeout={self.reward_timeout}: use seconds > 0")
        choose("reward_runtime", self.reward_runtime, opt.REWARD_RUNTIMES)
        choose("reward_errors", self.reward_errors, opt.REWARD_ERRORS)
        self._check_tis()

    def _check_tis(self):
        choose("tis_mode", self.tis_mode, opt.TIS_MODES)
        if self.tis_cap is None:
            return
        require(self.tis_cap > 0, f"tis_cap={self.tis_cap}: use C > 0 (2-3 is usual) or None")
        require(
            not self.dynamic_sampling,
            "tis_cap with dynamic_sampling=True: the re-sampled "
            "batch keeps no sampler log-probs; set tis_cap=None or dynamic_sampling=False",
        )
        require(
            self.top_k == 0 and self.top_p >= 1.0 or self.truncated_logprobs,
            f"tis_cap with top_k={self.top_k}/top_p={self.top_p}: the sampler's log-probs are "
            "of the truncated distribution; set truncated_logprobs=True (or no top-k/top-p)",
        )

    def _check_sampling(self):
        require(
            self.num_generations >= self.min_generations,
            f"num_generations={self.num_generations}: group advantages need at least 2 "
            "completions per prompt; use 2 or more (8-16 is usual)",
        )
        require(
            self.max_completion_length is None or self.max_completion_length >= 1,
            f"max_completion_length={self.max_completion_length}: use a positive number or None",
        )
        require(self.temperature >= 0, f"temperature={self.temperature}: use a value >= 0")
        require(0 < self.top_p <= 1, f"top_p={self.top_p}: use a value in (0, 1]")

    def _check_loss(self):
        require(
            self.beta >= 0,
            f"beta={self.beta}: the KL weight cannot be negative; use 0 "
            "(no reference model) or a small positive value such as 0.04",
        )
        choose("kl_estimator", self.kl_estimator, opt.KL_ESTIMATORS)
        check_ref_sync(self)
        require(self.epsilon > 0, f"epsilon={self.epsilon}: use a value > 0, such as 0.2")
        choose("loss_type", self.loss_type, opt.LOSS_TYPES)
        if self.epsilon_high is not None and self.loss_type != "cispo":
            require(
                self.epsilon_high >= self.epsilon,
                f"epsilon_high={self.epsilon_high} < epsilon={self.epsilon}: clip-higher "
                "widens the upper range; set epsilon_high >= epsilon (DAPO: 0.28) or None",
            )
        require(
            self.loss_type != "cispo" or self.epsilon_high is not None,
            "epsilon_high=None with loss_type='cispo': CISPO caps the IS weight at "
            "epsilon_high (absolute, e.g. 5.0); set it",
        )
        choose("scale_rewards", self.scale_rewards, opt.SCALE_REWARDS)
        choose("importance_sampling_level", self.importance_sampling_level, opt.IS_LEVELS)
        choose("advantage_estimator", self.advantage_estimator, opt.ADVANTAGE_ESTIMATORS)

    def _check_dapo(self):
        require(
            self.overlong_buffer == 0 or (self.max_completion_length or 0) > self.overlong_buffer,
            f"overlong_buffer={self.overlong_buffer} needs max_completion_length > "
            f"overlong_buffer (it is {self.max_completion_length}): set both",
        )
        require(self.overlong_penalty >= 0, f"overlong_penalty={self.overlong_penalty}: use >= 0")


@dataclass
class MultiTurnConfig(GRPOConfig):
    """GRPO on multi-turn episodes with an environment (``labkit.algos.multiturn``)."""

    max_turns: int = 4
    """Policy turns per episode at most; an episode still calling after them is truncated."""
    tool_timeout: float = 1.0
    """Seconds a tool call may take; past it the call is a failure ("timeout") and the episode goes on."""
    max_completion_length: int | None = 32
    """Tokens per episode at most, the policy's and the environment's together."""

    def __post_init__(self):
        super().__post_init__()
        at_least(self, 1, "max_turns")
        require(self.tool_timeout > 0, f"tool_timeout={self.tool_timeout}: use seconds > 0")
        require(
            not self.dynamic_sampling,
            "dynamic_sampling=True is not supported with multi-turn episodes; set it to False",
        )
        require(
            not self.skip_zero_advantage,
            "skip_zero_advantage=True is not supported with multi-turn episodes; set it to False",
        )
        require(
            self.max_completion_length is not None,
            "max_completion_length=None: episodes "
            "need a token limit; set a number (policy and environment tokens together)",
        )


@dataclass
class OnlineDPOConfig(GRPOConfig):
    """Online DPO (Guo et al. 2024, 2402.04792; TRL's ``OnlineDPOTrainer``): each step samples
    two completions of each of ``prompts_per_step`` prompts from the current policy, the
    verifier picks chosen and rejected, one DPO step (``labkit.algos.online_dpo``). The sampling
    and reward fields are GRPO's; GRPO's loss fields (``UNUSED``: epsilon, loss_type,
    scale_rewards, advantage_estimator, kl_estimator, entropy_coef, ...) are never read, and a
    value other than GRPO's default raises."""

    UNUSED: ClassVar[tuple[str, ...]] = (
        "kl_estimator",
        "sync_ref_model",
        "ref_model_mixup_alpha",
        "ref_model_sync_steps",
        "epsilon",
        "epsilon_high",
        "loss_type",
        "scale_rewards",
        "importance_sampling_level",
        "advantage_estimator",
        "diagnostics",
        "entropy_coef",
        "off_policy_mask",
        "tis_cap",
        "tis_mode",
    )
    """GRPO's fields that online DPO never reads (its loss is DPO's, its KL logged as k1 and k3)."""

    num_generations: int = 2
    """Completions per prompt: 2, one pair (TRL samples 2)."""
    prompts_per_step: int = 32
    """Prompts per step: 2 x this many samples, at most this many pairs."""
    beta: float = 0.1
    """DPO's beta, the weight of the implicit KL to pi_ref (TRL's default 0.1)."""
    learning_rate: float = 3e-5
    """AdamW's, as DPOConfig's (the tiny policy collapses under DPO from ~5e-5)."""
    lr_scheduler_type: str = "constant"
    """DPO keeps its learning rate (as DPOConfig)."""

    def __post_init__(self):
        super().__post_init__()
        require(
            self.num_generations == 2,
            f"num_generations={self.num_generations}: online DPO samples 2 completions a "
            "prompt (one pair, as TRL); use 2",
        )
        require(self.beta > 0, f"beta={self.beta}: DPO's beta must be > 0 (0.1 is usual)")
        require(
            self.num_iterations == 1,
            f"num_iterations={self.num_iterations}: online DPO takes one step a batch; use 1",
        )
        require(
            not (self.dynamic_sampling or self.skip_zero_advantage),
            "dynamic_sampling / skip_zero_advantage are GRPO options; set them to False",
        )
        grpo = {f.name: f.default for f in fields(GRPOConfig)}
        for name in self.UNUSED:
            require(
                getattr(self, name) == grpo[name],
                f"{name}={getattr(self, name)!r}: online DPO never reads it (a GRPO option; its "
                f"loss is DPO's, with beta); leave it at {grpo[name]!r}",
            )
