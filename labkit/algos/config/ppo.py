"""PPO's config: a critic, GAE and minibatches on GRPO's sampling and optimiser fields.

>>> PPOConfig(lam=1.5)
Traceback (most recent call last):
...
ValueError: lam=1.5: GAE's lambda must be in [0, 1]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from labkit.algos.config.base import at_least, require
from labkit.algos.config.grpo import GRPOConfig


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
    value_warmup_steps: int = 0
    """Critic-only rounds before the policy's first update (VC-PPO's value pretraining): each
    samples a batch and fits V(s_t) to its returns, the policy's trunk frozen; 0: off."""
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
        require(
            self.value_head,
            "value_head=False: PPO's advantages come from a critic; keep "
            "value_head=True, or train without a critic with GRPOTrainer (GRPO, RLOO)",
        )
        require(0 <= self.lam <= 1, f"lam={self.lam}: GAE's lambda must be in [0, 1]")
        require(0 <= self.gamma <= 1, f"gamma={self.gamma}: the discount must be in [0, 1]")
        require(self.vf_coef >= 0, f"vf_coef={self.vf_coef}: use a value >= 0 (0.1 is usual)")
        require(
            self.cliprange_value is None or self.cliprange_value > 0,
            f"cliprange_value={self.cliprange_value}: use a value > 0 or None (off)",
        )
        require(
            self.value_learning_rate is None or self.value_learning_rate > 0,
            f"value_learning_rate={self.value_learning_rate}: use a value > 0 or None",
        )
        at_least(self, 1, "ppo_epochs")
        at_least(self, 0, "value_warmup_steps")
        require(
            self.off_policy_mask is None,
            f"off_policy_mask={self.off_policy_mask}: "
            "PPOTrainer does not apply it; use GRPOTrainer or set it to None",
        )
        require(
            not self.skip_zero_advantage,
            "skip_zero_advantage=True: PPOTrainer does not "
            "apply it (GAE's per-token advantages are rarely 0); set it to False",
        )
        require(
            self.tis_cap is None,
            f"tis_cap={self.tis_cap}: PPOTrainer does not apply "
            "truncated importance sampling; use GRPOTrainer or set it to None",
        )
        B = self.prompts_per_step * self.num_generations
        require(
            self.num_mini_batches >= 1 and B % self.num_mini_batches == 0,
            f"num_mini_batches={self.num_mini_batches} does not divide the batch of "
            f"prompts_per_step x num_generations = {B}: pick a divisor of {B}",
        )
