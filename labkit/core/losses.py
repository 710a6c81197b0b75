"""All losses in one import: policy losses (``policy.py``), preference losses (``preference.py``)
and the PPO value loss, which lives here.

Shapes: B sequences, T tokens.
"""

from __future__ import annotations

import torch

from labkit.core.numerics import float_dtype, where_valid
from labkit.core.options import LOSS_TYPES
from labkit.core.policy import policy_loss, token_weights
from labkit.core.preference import bradley_terry_loss, dpo_loss
from labkit.core.surrogate import clipped_surrogate, importance_ratio, kl_penalty

__all__ = [
    "LOSS_TYPES",
    "bradley_terry_loss",
    "clipped_surrogate",
    "dpo_loss",
    "importance_ratio",
    "kl_penalty",
    "policy_loss",
    "token_weights",
    "value_loss",
]


def value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    clip: float | None = 0.2,
) -> tuple[torch.Tensor, dict]:
    """PPO's clipped value loss, 1/2 mean_t max((V - R)^2, (V_clip - R)^2),

    V_clip = V_old + clip(V - V_old, -c, c): the critic may not move more than c from the value
    it had at rollout time (Schulman et al. PPO implementation; "PPO for LLMs" in the seed
    material; TRL's former PPOTrainer and cleanrl's ``clip_vloss``). ``clip=None``: plain
    1/2 mean (V - R)^2. values, old_values, returns, mask: [B, T] (or any equal shapes).

    stats: ``vf/clipfrac`` (fraction of valid tokens where the clipped term is larger),
    ``vf/value_mean``, ``vf/explained_var`` (1 - Var[R - V] / Var[R]), ``loss``. Padding may
    hold anything (NaN, inf): it is replaced by 0 first; fp16/bf16 are computed in float32.

    >>> v, old, R = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 0.0]), torch.tensor([1.0, 1.0])
    >>> value_loss(v, old, R, torch.ones(2), clip=0.5)[0]  # (max(0, 0.25) + max(1, 1)) / 4
    tensor(0.3125)
    """
    dtype = float_dtype(values, old_values, returns)
    values, old_values, returns = (
        where_valid(x.to(dtype), mask)  # [B, T]: 0 at padding
        for x in (values, old_values, returns)
    )
    mask = mask.to(dtype)
    n = mask.sum().clamp(min=1.0)
    unclipped = (values - returns) ** 2  # [B, T]
    if clip is None:
        per_token, clipped_frac = unclipped, unclipped.new_zeros(())
    else:  # value clipping: OpenAI baselines' PPO, not its paper (Engstrom et al. 2005.12729)
        v_clip = old_values + (values - old_values).clamp(-clip, clip)  # [B, T]
        clipped = (v_clip - returns) ** 2  # [B, T]
        per_token = torch.max(unclipped, clipped)
        clipped_frac = ((clipped > unclipped).to(mask.dtype) * mask).sum() / n
    loss = 0.5 * (per_token * mask).sum() / n
    err, r_mean = returns - values, (returns * mask).sum() / n
    var_r = (((returns - r_mean) * mask) ** 2).sum() / n
    var_err = (((err - (err * mask).sum() / n) * mask) ** 2).sum() / n
    stats = {
        "vf/clipfrac": clipped_frac,
        "vf/value_mean": (values * mask).sum() / n,
        "vf/explained_var": 1 - var_err / var_r.clamp(min=1e-8),
        "loss": loss,
    }
    return loss, {k: v.detach() for k, v in stats.items()}
