"""Every algorithm's config, one dataclass each, on one base. Field names follow TRL where TRL
has the concept, the paper's symbol (``SYMBOLS``) where it does not.

Bad values are refused in ``__post_init__`` with a message that names the field and the fix,
before any work is done: numbers with :func:`require`, string options with
:func:`labkit.core.options.choose` over the allowed values defined once in
:mod:`labkit.core.options`. ``docs/CONFIG.md`` is the table of every field, made by
``python scripts/config_table.py``.

>>> GRPOConfig(beta=-1)
Traceback (most recent call last):
...
ValueError: beta=-1: the KL weight cannot be negative; use 0 (no reference model) or a small positive value such as 0.04
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import ClassVar

from labkit.core import options as opt
from labkit.core.options import choose

SYMBOLS = {
    "learning_rate": "η", "max_grad_norm": "‖g‖max", "num_generations": "G",
    "prompts_per_step": "B/G", "max_completion_length": "L_max", "temperature": "τ",
    "top_p": "p", "top_k": "k", "beta": "β", "epsilon": "ε_low", "epsilon_high": "ε_high",
    "num_iterations": "μ", "kl_estimator": "k1/k2/k3", "overlong_buffer": "L_cache",
    "gamma": "γ", "lam": "λ", "vf_coef": "c_vf", "cliprange_value": "ε_v",
    "ppo_epochs": "K", "batch_size": "B", "entropy_coef": "c_H", "off_policy_mask": "δ",
}
"""The paper's symbol of a field, where it has one (DeepSeekMath, DAPO, PPO, DPO)."""


# The labs' base GRPO run: labs 73-78 and their experiments (passk, pg_variance, why_not_learning,
# entropy_kl, clipping) build on it; it was the demo's configuration until 2026-11-25. Chosen by a
# sweep on seed 0 (16 x 16, 300 steps, held-out sampled accuracy from 0.39): lr 1e-3 -> dips then
# 0.35 at 200 steps; 3e-4 -> 0.63 (200); 5e-4 -> 0.70; 3e-4 mu=2 -> 0.73; 5e-4 mu=2 -> 0.77; then
# on a 110 s budget (one thread, lr 5e-4, mu=2): 16x16 -> 0.746; mu=4 -> 0.689; 32x8 -> 0.827;
# 64x4 -> 0.861; 32x4 -> 0.870.
BASE_RUN = {"reward_funcs": ["digit_partial"], "max_steps": 600, "learning_rate": 5e-4,
            "num_iterations": 2, "num_generations": 4, "prompts_per_step": 32, "beta": 0.0}

# The demo's configuration (`python -m labkit demo`'s flags override); measured by
# benchmarks/time_to_accuracy.py. From benchmarks/demo_sweep.py (2026-11-25, 2 threads, seconds
# of training to 0.90 held-out sampled accuracy, seed 0; benchmarks/demo_sweep.txt): BASE_RUN
# 86.5 s (600 steps); mu=1 0.80 at 600 steps; lr 1e-3 collapses first; mu=3, Adam beta2 0.99,
# max_grad_norm 2, cosine, 16x8, 64x2: none faster; 48 x 4 (450 steps) 79.1 s. Training on the
# rows with A != 0 only (skip_zero_advantage, same gradient): 48 x 4 52.1 s, 64 x 4 (350 steps)
# 47.1 s; 64 x 4 on seeds 1 and 2: 56.7 s and 42.1 s.
DEMO_DEFAULTS = {**BASE_RUN, "prompts_per_step": 64, "max_steps": 350,
                 "skip_zero_advantage": True}


def require(ok: bool, message: str) -> None:
    """Raise ``ValueError(message)`` unless ``ok``: the one validation style of every config."""
    if not ok:
        raise ValueError(message)


def at_least(config, lo, *names: str) -> None:
    """Each field in ``names`` must be >= ``lo`` (0: 'use 0 (off) or more')."""
    for name in names:
        v = getattr(config, name)
        require(v >= lo, f"{name}={v}: use {'0 (off)' if lo == 0 else lo} or more")


@dataclass
class TrainConfig:
    """What every trainer shares: the optimiser (AdamW), its schedule, the run's length, the
    seed and checkpoints."""

    learning_rate: float = 1e-3
    """AdamW learning rate at the peak of the schedule."""
    lr_scheduler_type: str = "linear"
    """After warm-up: 'linear' decays to 0 at max_steps, 'cosine' too, 'constant' keeps it."""
    warmup_steps: int = 0
    """Linear warm-up of the learning rate over this many steps."""
    weight_decay: float = 0.0
    """AdamW's decoupled weight decay."""
    max_grad_norm: float = 1.0
    """Gradient clipping by global norm (0: off; the norm is recorded either way)."""
    max_steps: int = 200
    """Optimisation steps of the run (the schedule ends here)."""
    seed: int = 0
    """Seeds Python, torch, the prompt sampler and the sampling generator."""
    save_steps: int = 50
    """Write a checkpoint every save_steps steps when the run has a name (0: never); a named
    run also writes one when ``train()`` returns (done or stopped), so it resumes from there.
    Every step costs a full model + optimizer state (GBs for SmolLM2): TRL's default is 500."""
    save_total_limit: int | None = 2
    """Checkpoints kept (oldest deleted first); None keeps all (to fork at any step)."""
    precision: str = "auto"
    """Autocast: 'auto' (bf16 on GPUs >= sm80, fp16 + scaler on 7.x, else fp32) or forced."""
    gradient_checkpointing: bool = False
    """Recompute each layer's activations in backward instead of storing them (HF's, non-
    reentrant): less memory on long sequences for ~one more forward; no prompt sharing then."""

    def __post_init__(self):
        require(self.learning_rate > 0, f"learning_rate={self.learning_rate}: use a value > 0")
        choose("lr_scheduler_type", self.lr_scheduler_type, opt.LR_SCHEDULES)
        at_least(self, 0, "warmup_steps", "weight_decay", "max_grad_norm", "save_steps")
        at_least(self, 1, "max_steps")
        require(self.save_total_limit is None or self.save_total_limit >= 1,
                f"save_total_limit={self.save_total_limit}: use 1 or more, or None (keep all)")
        choose("precision", self.precision, opt.PRECISIONS)

    def to_dict(self) -> dict:
        return asdict(self)


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
        require(self.off_policy_mask is None or self.off_policy_mask >= 0,
                f"off_policy_mask={self.off_policy_mask}: use a threshold >= 0 (e.g. 0.1) or None")
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
        require(not self.dynamic_sampling, "tis_cap with dynamic_sampling=True: the re-sampled "
                "batch keeps no sampler log-probs; set tis_cap=None or dynamic_sampling=False")
        require(self.top_k == 0 and self.top_p >= 1.0 or self.truncated_logprobs,
                f"tis_cap with top_k={self.top_k}/top_p={self.top_p}: the sampler's log-probs are "
                "of the truncated distribution; set truncated_logprobs=True (or no top-k/top-p)")

    def _check_sampling(self):
        require(self.num_generations >= self.min_generations,
                f"num_generations={self.num_generations}: group advantages need at least 2 "
                "completions per prompt; use 2 or more (8-16 is usual)")
        require(self.max_completion_length is None or self.max_completion_length >= 1,
                f"max_completion_length={self.max_completion_length}: use a positive number or None")
        require(self.temperature >= 0, f"temperature={self.temperature}: use a value >= 0")
        require(0 < self.top_p <= 1, f"top_p={self.top_p}: use a value in (0, 1]")

    def _check_loss(self):
        require(self.beta >= 0, f"beta={self.beta}: the KL weight cannot be negative; use 0 "
                "(no reference model) or a small positive value such as 0.04")
        choose("kl_estimator", self.kl_estimator, opt.KL_ESTIMATORS)
        require(self.epsilon > 0, f"epsilon={self.epsilon}: use a value > 0, such as 0.2")
        choose("loss_type", self.loss_type, opt.LOSS_TYPES)
        if self.epsilon_high is not None and self.loss_type != "cispo":
            require(self.epsilon_high >= self.epsilon,
                    f"epsilon_high={self.epsilon_high} < epsilon={self.epsilon}: clip-higher "
                    "widens the upper range; set epsilon_high >= epsilon (DAPO: 0.28) or None")
        require(self.loss_type != "cispo" or self.epsilon_high is not None,
                "epsilon_high=None with loss_type='cispo': CISPO caps the IS weight at "
                "epsilon_high (absolute, e.g. 5.0); set it")
        choose("scale_rewards", self.scale_rewards, opt.SCALE_REWARDS)
        choose("importance_sampling_level", self.importance_sampling_level, opt.IS_LEVELS)
        choose("advantage_estimator", self.advantage_estimator, opt.ADVANTAGE_ESTIMATORS)

    def _check_dapo(self):
        require(self.overlong_buffer == 0 or (self.max_completion_length or 0) > self.overlong_buffer,
                f"overlong_buffer={self.overlong_buffer} needs max_completion_length > "
                f"overlong_buffer (it is {self.max_completion_length}): set both")
        require(self.overlong_penalty >= 0, f"overlong_penalty={self.overlong_penalty}: use >= 0")


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
    kl_clamp_min: float | None = None
    """Clamp the per-token KL in the reward at this floor, as alpaca_farm's PPO (seed 004:
    ``kl = torch.clamp(logprobs - ref_logprobs, min=0.0)``): 0 drops negative k1; None: off."""
    min_generations: ClassVar[int] = 1

    def __post_init__(self):
        super().__post_init__()
        require(self.value_head, "value_head=False: PPO's advantages come from a critic; keep "
                "value_head=True, or train without a critic with GRPOTrainer (GRPO, RLOO)")
        require(0 <= self.lam <= 1, f"lam={self.lam}: GAE's lambda must be in [0, 1]")
        require(0 <= self.gamma <= 1, f"gamma={self.gamma}: the discount must be in [0, 1]")
        require(self.vf_coef >= 0, f"vf_coef={self.vf_coef}: use a value >= 0 (0.1 is usual)")
        require(self.cliprange_value is None or self.cliprange_value > 0,
                f"cliprange_value={self.cliprange_value}: use a value > 0 or None (off)")
        require(self.value_learning_rate is None or self.value_learning_rate > 0,
                f"value_learning_rate={self.value_learning_rate}: use a value > 0 or None")
        at_least(self, 1, "ppo_epochs")
        require(self.off_policy_mask is None, f"off_policy_mask={self.off_policy_mask}: "
                "PPOTrainer does not apply it; use GRPOTrainer or set it to None")
        require(not self.skip_zero_advantage, "skip_zero_advantage=True: PPOTrainer does not "
                "apply it (GAE's per-token advantages are rarely 0); set it to False")
        require(self.tis_cap is None, f"tis_cap={self.tis_cap}: PPOTrainer does not apply "
                "truncated importance sampling; use GRPOTrainer or set it to None")
        B = self.prompts_per_step * self.num_generations
        require(self.num_mini_batches >= 1 and B % self.num_mini_batches == 0,
                f"num_mini_batches={self.num_mini_batches} does not divide the batch of "
                f"prompts_per_step x num_generations = {B}: pick a divisor of {B}")


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
        require(self.max_completion_length is None or self.max_completion_length >= 1,
                f"max_completion_length={self.max_completion_length}: use a positive number or None")
        choose("loss_type", self.loss_type, opt.DPO_LOSS_TYPES)
        choose("pair_mode", self.pair_mode, opt.PAIR_MODES)
        require(self.num_generations >= 2, f"num_generations={self.num_generations}: pairs "
                "need at least 2 completions per prompt")


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
        require(not self.dynamic_sampling, "dynamic_sampling=True is not supported with "
                "multi-turn episodes; set it to False")
        require(not self.skip_zero_advantage, "skip_zero_advantage=True is not supported "
                "with multi-turn episodes; set it to False")
        require(self.max_completion_length is not None, "max_completion_length=None: episodes "
                "need a token limit; set a number (policy and environment tokens together)")
