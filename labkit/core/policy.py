"""Policy-gradient losses for language models: the GRPO family (PPO-clip with per-loss-type
aggregation), GSPO's sequence-level ratio, CISPO's clipped IS weight, plain REINFORCE.

``policy_loss`` composes the pieces of ``labkit.core.surrogate`` (``importance_ratio``,
``clipped_surrogate``, ``kl_penalty``) with the aggregation weights of ``token_weights``.

Shapes: B sequences, T completion tokens. ``logp`` (with grad), ``old_logp``, ``ref_logp``,
``mask``: [B, T]; advantages [B] (one per sequence, broadcast over its tokens) or [B, T].

Where this departs from the papers / TRL, and why:
- Ratios are exp(min(log ratio, 20)) (see ``labkit.core.kl``): finite for any input, identical
  to TRL wherever |log ratio| < 20.
- ``kl_is_correction`` (default True, as TRL's ``use_bias_correction_kl``) multiplies the KL
  term by the importance ratio pi_theta / pi_old. For the unbiased estimators k1 and k3 the
  ratio keeps its gradient (TRL, DeepSeek-V3.2): E[grad] is then the gradient of the reverse
  KL(pi_theta || pi_ref) the objective names, even on-policy (plain k3's mean gradient is the
  *forward* KL's). For k2 and k3_st, whose gradient already is the KL gradient, the ratio is
  detached (an importance weight on that gradient); TRL has no k2, so this is labkit's choice.
- ``cispo`` with ``epsilon_high=None`` raises instead of silently capping the ratio at 0.2.
- ``reinforce`` ignores ``old_logp`` in the loss (no ratio, on-policy by assumption) and sums
  each sequence's tokens (the log-prob of the whole sequence), averaged over sequences.
- Padding (mask 0) may hold anything (-inf, NaN log-probs): it is replaced by 0 before any
  arithmetic, so the loss, its gradient and every stat depend on valid tokens only (TRL
  multiplies by the mask, so a NaN there would reach its loss). fp16/bf16 inputs are computed
  in float32; float64 stays float64.
"""

from __future__ import annotations

import torch

from labkit.core.numerics import float_dtype, where_valid
from labkit.core.options import IS_LEVELS, LOSS_TYPES, choose
from labkit.core.surrogate import clipped_surrogate, importance_ratio, kl_penalty


def token_weights(
    mask: torch.Tensor,
    loss_type: str = "grpo",
    max_completion_length: int | None = None,
    num_items_in_batch: float | torch.Tensor | None = None,
) -> torch.Tensor:
    """The weight w_{i,t} of each token's loss, loss = sum_{i,t} w_{i,t} l_{i,t}: [B, T] -> [B, T].

    - grpo (DeepSeekMath): 1 / (B |o_i|), each sequence counts equally, so a token of a short
      answer weighs more than a token of a long one;
    - bnpo: 1 / sum|o| over the batch (every token equal);
    - dr_grpo (Dr. GRPO 2503.20783): 1 / (B L_max), L_max = ``max_completion_length`` (the
      padded width T when None): a constant, no length bias;
    - dapo / cispo (DAPO 2503.14476 "token-level loss"): 1 / ``num_items_in_batch``, the token
      count of the whole generation batch (default: this mask's count, then equal to bnpo);
    - reinforce: 1 / B (sum over a sequence's tokens, mean over sequences).

    >>> m = torch.tensor([[1., 1., 1., 1.], [1., 0., 0., 0.]])
    >>> token_weights(m, "grpo")
    tensor([[0.1250, 0.1250, 0.1250, 0.1250],
            [0.5000, 0.0000, 0.0000, 0.0000]])
    >>> token_weights(m, "bnpo")[1, 0], token_weights(m, "dr_grpo")[1, 0]
    (tensor(0.2000), tensor(0.1250))
    """
    choose("loss_type", loss_type, LOSS_TYPES)
    mask = mask.to(float_dtype(mask))  # [B, T]; float64 stays float64
    B, T = mask.shape
    if loss_type == "grpo":  # DeepSeekMath (2402.03300): 1/|o_i| per sequence
        return mask / mask.sum(-1, keepdim=True).clamp(min=1.0) / B  # [B, T]
    if loss_type == "bnpo":  # TRL's bnpo: the token mean of this batch
        return mask / mask.sum().clamp(min=1.0)
    if loss_type == "dr_grpo":  # Dr. GRPO (2503.20783): a constant, no 1/|o_i|
        return mask / (B * (max_completion_length or T))
    if loss_type == "reinforce":  # sum over a sequence, mean over sequences
        return mask / B
    n = (
        mask.sum()
        if num_items_in_batch is None
        else torch.as_tensor(num_items_in_batch, device=mask.device)
    )
    n = n.to(mask.dtype)
    return mask / n.clamp(min=1.0)  # dapo, cispo: token-level loss (DAPO, 2503.14476)


def _check(logp, old_logp, advantages, mask, loss_type, level, epsilon_high, beta, ref_logp):
    choose("loss_type", loss_type, LOSS_TYPES)
    choose("importance_sampling_level", level, IS_LEVELS)
    if old_logp.shape != logp.shape or mask.shape != logp.shape or logp.dim() != 2:
        raise ValueError(
            f"logp, old_logp, mask must all be [B, T]; got {tuple(logp.shape)}, "
            f"{tuple(old_logp.shape)}, {tuple(mask.shape)}."
        )
    if advantages.shape not in (logp.shape[:1], logp.shape):
        raise ValueError(f"advantages must be [B] or [B, T]; got {tuple(advantages.shape)}.")
    if loss_type == "cispo" and epsilon_high is None:
        raise ValueError(
            "loss_type='cispo' needs epsilon_high, an absolute cap on the IS "
            "ratio (not 1 + eps); TRL and ScaleRL recommend epsilon_high=5.0."
        )
    if beta != 0.0 and ref_logp is None:
        raise ValueError(f"beta={beta} needs ref_logp (log-probs under the reference model).")


def _valid_only(logp, old_logp, advantages, mask, ref_logp):
    """One float dtype for all, and 0 wherever the mask is 0 (an empty row's advantage too)."""
    dtype = float_dtype(logp, old_logp, advantages, ref_logp)
    mask = mask.to(dtype)  # [B, T]
    adv = advantages.to(dtype)
    adv = adv.unsqueeze(-1) if adv.dim() == 1 else adv  # [B, 1] or [B, T]
    adv = where_valid(adv, mask if adv.shape == mask.shape else mask.sum(-1, keepdim=True))
    logp, old_logp = where_valid(logp.to(dtype), mask), where_valid(old_logp.to(dtype), mask)
    if ref_logp is not None:
        ref_logp = where_valid(ref_logp.to(dtype), mask)  # [B, T]
    return logp, old_logp, adv, mask, ref_logp


def policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    loss_type: str = "grpo",
    epsilon: float = 0.2,
    epsilon_high: float | None = None,
    importance_sampling_level: str = "token",
    max_completion_length: int | None = None,
    ref_logp: torch.Tensor | None = None,
    beta: float = 0.0,
    kl_estimator: str = "k3",
    kl_is_correction: bool = True,
    num_items_in_batch: float | torch.Tensor | None = None,
    delta: float | None = None,
) -> tuple[torch.Tensor, dict]:
    """Clipped surrogate + beta KL, aggregated per ``loss_type``: loss = sum w_{i,t} l_{i,t},

    l_{i,t} = -min(rho A, clip(rho, 1 - eps, 1 + eps_high) A) + beta KL_{i,t}   (PPO / GRPO)
    l_{i,t} = -sg(min(rho, eps_high)) A log pi_theta + beta KL_{i,t}        (CISPO, eps_high absolute)
    l_{i,t} = -A log pi_theta + beta KL_{i,t}                                (REINFORCE)

    rho = pi_theta / pi_old per token, or GSPO's exp(mean_t log rho) per sequence
    (``importance_sampling_level="sequence"``, 2507.18071); w from :func:`token_weights`;
    KL_{i,t} from ``kl_estimator`` (k3 in GRPO), times rho when ``kl_is_correction``.
    Each piece is a public function of ``labkit.core.surrogate``: ``importance_ratio`` (rho),
    ``clipped_surrogate`` (the first term), ``kl_penalty`` (KL_{i,t}).
    Sources: PPO (1707.06347), DeepSeekMath (2402.03300), DAPO, Dr. GRPO, CISPO (2506.13585);
    equal to TRL 1.16 ``GRPOTrainer._compute_loss`` (tests/test_core_trl_parity.py).
    Every argument after the four tensors is keyword-only.

    Returns (loss, stats): stats holds detached 0-d tensors ``clip/ratio_low``,
    ``clip/ratio_high``, ``clip/region`` (fractions of valid tokens; of sequences at the sequence
    level, as TRL; ``clip/delta`` too when ``delta`` is set), ``ratio/mean|min|max``,
    ``loss/policy``, ``loss/kl`` and, when ref_logp is given, ``kl`` (mean of the KL term as in
    the loss) and ``kl/k1``, ``kl/k2``, ``kl/k3``; ``stats["per_token"]`` is a dict of detached
    [B, T] tensors (at padding: the values for 0 inputs, never NaN): ratio, clipped, weight, loss
    (and k1, k2, k3 with ref_logp).

    >>> lp = torch.log(torch.tensor([[0.5, 0.5], [0.2, 1.0]])).requires_grad_()
    >>> loss, st = policy_loss(lp, lp.detach(), torch.tensor([1.0, -1.0]), torch.ones(2, 2))
    >>> loss, st["clip/region"]  # ratio 1: loss = -mean(A) = 0, nothing clipped
    (tensor(0., grad_fn=<SumBackward0>), tensor(0.))
    """
    level = importance_sampling_level
    _check(logp, old_logp, advantages, mask, loss_type, level, epsilon_high, beta, ref_logp)
    logp, old_logp, adv, mask, ref_logp = _valid_only(logp, old_logp, advantages, mask, ref_logp)
    ratio, ratio_info = importance_ratio(logp, old_logp, mask, level)  # [B, T] or [B, 1]
    l_pg, clip_info = clipped_surrogate(
        ratio,
        adv,
        logp,
        mask,
        loss_type=loss_type,
        epsilon=epsilon,
        epsilon_high=epsilon_high,
        delta=delta,
        level=level,
    )
    w = token_weights(mask, loss_type, max_completion_length, num_items_in_batch)  # [B, T]
    per_token = {
        "ratio": ratio.expand_as(mask),
        **clip_info.pop("per_token"),
        "weight": w,
        "loss": l_pg.expand_as(mask),
    }
    delta_info = {"clip/delta": clip_info.pop("clip/delta")} if delta is not None else {}
    stats = {
        **clip_info,
        **ratio_info,
        "loss/policy": (w * l_pg).sum(),
        "loss/kl": mask.new_zeros(()),
        **delta_info,
    }
    loss = stats["loss/policy"]
    if ref_logp is not None:
        kl, kl_info = kl_penalty(
            logp, ref_logp, ratio, mask, estimator=kl_estimator, is_correction=kl_is_correction
        )  # [B, T]
        per_token.update(kl_info.pop("per_token"))
        stats.update(kl_info)
        if beta != 0.0:
            stats["loss/kl"] = beta * (w * kl).sum()
            loss = loss + stats["loss/kl"]
            per_token["loss"] = l_pg + beta * kl  # [B, T]
    stats = {k: v.detach() for k, v in stats.items()}
    stats["per_token"] = {k: v.detach() for k, v in per_token.items()}
    return loss, stats
