"""The config of :class:`labkit.algos.trpo.TRPOTrainer`: PPO-clip, PPO's adaptive KL penalty and
TRPO on one GRPO-family trainer, for the PG -> TRPO -> PPO comparison on a language model.

>>> TRPOConfig(method="trpo", num_iterations=4)
Traceback (most recent call last):
...
ValueError: num_iterations=4 with method='trpo': TRPO takes one natural-gradient step per batch; set num_iterations=1
"""

from __future__ import annotations

from dataclasses import dataclass

from labkit.algos.config.base import at_least, require
from labkit.algos.config.grpo import GRPOConfig
from labkit.core.options import choose

TRPO_METHODS = ("clip", "kl_penalty", "trpo")
"""How the policy moves from each batch (``labkit.algos.trpo``)."""
KL_CONTROLLERS = ("adaptive", "fixed")
"""beta_old after each step: PPO's halve/double (1707.06347 sec. 4) or kept."""


@dataclass
class TRPOConfig(GRPOConfig):
    """GRPO's sampling and advantages; the policy update by ``method``."""

    method: str = "trpo"
    """'clip' (PPO-clip, GRPO's loss: num_iterations = 1 is plain PG), 'kl_penalty' (PPO's
    L^KLPEN = E[rho A] - beta_old KL(pi_old || pi_theta), no clipping, 1707.06347 sec. 4) or
    'trpo' (max E[rho A] s.t. KL(pi_old || pi_theta) <= delta, 1502.05477)."""
    delta: float = 0.01
    """delta, TRPO's bound on the mean per-token KL(pi_old || pi_theta) of one update."""
    cg_iters: int = 10
    """Conjugate-gradient iterations for x ~ F^{-1} g (TRPO appendix C: 10)."""
    damping: float = 0.1
    """F + damping I in the Fisher-vector products (TRPO's code: 0.1)."""
    backtrack_coef: float = 0.5
    """TRPO's line search shrinks the step by this factor until it improves and fits delta."""
    max_backtracks: int = 10
    """Shrinks at most; then the update is skipped (theta stays at theta_old)."""
    beta_old: float = 1.0
    """beta of PPO's KL penalty on KL(pi_old || pi_theta) ('kl_penalty'; PPO's initial 1)."""
    d_targ: float = 0.01
    """d_targ, the KL per update PPO's adaptive beta aims at ('kl_penalty')."""
    kl_controller: str = "adaptive"
    """'adaptive': beta_old halves when d < d_targ / 1.5, doubles when d > 1.5 d_targ; 'fixed'."""

    def __post_init__(self):
        super().__post_init__()
        choose("method", self.method, TRPO_METHODS)
        choose("kl_controller", self.kl_controller, KL_CONTROLLERS)
        for name in ("delta", "damping", "d_targ"):
            require(getattr(self, name) > 0, f"{name}={getattr(self, name)}: use a value > 0")
        at_least(self, 0, "beta_old", "max_backtracks")
        at_least(self, 1, "cg_iters")
        require(
            0 < self.backtrack_coef < 1,
            f"backtrack_coef={self.backtrack_coef}: use a value in (0, 1), such as 0.5",
        )
        require(
            self.method != "trpo" or self.num_iterations == 1,
            f"num_iterations={self.num_iterations} with method='trpo': TRPO takes one "
            "natural-gradient step per batch; set num_iterations=1",
        )
        require(
            self.off_policy_mask is None and self.tis_cap is None and not self.skip_zero_advantage,
            "off_policy_mask, tis_cap and skip_zero_advantage are GRPOTrainer's: "
            "TRPOTrainer does not apply them; leave them off",
        )
        require(
            self.entropy_coef == 0 or self.method == "clip",
            f"entropy_coef={self.entropy_coef}: only method='clip' applies it; set it to 0",
        )
