"""Policy-gradient losses for language models: the GRPO family (PPO-clip with per-loss-type
aggregation), GSPO's sequence-level ratio, CISPO's clipped IS weight, plain REINFORCE.

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
"""

from __future__ import annotations

import torch

from labkit.core.kl import kl_estimate, kl_k1, kl_k2, kl_k3, safe_exp
from labkit.core.options import IS_LEVELS, LOSS_TYPES, choose


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
    mask = mask.float()  # [B, T]
    B, T = mask.shape
    if loss_type == "grpo":
        return mask / mask.sum(-1, keepdim=True).clamp(min=1.0) / B  # [B, T]
    if loss_type == "bnpo":
        return mask / mask.sum().clamp(min=1.0)
    if loss_type == "dr_grpo":
        return mask / (B * (max_completion_length or T))
    if loss_type == "reinforce":
        return mask / B
    n = mask.sum() if num_items_in_batch is None else torch.as_tensor(num_items_in_batch).float()
    return mask / n.clamp(min=1.0)  # dapo, cispo


def _check(logp, old_logp, advantages, mask, loss_type, level, epsilon_high, beta, ref_logp):
    choose("loss_type", loss_type, LOSS_TYPES)
    choose("importance_sampling_level", level, IS_LEVELS)
    if old_logp.shape != logp.shape or mask.shape != logp.shape or logp.dim() != 2:
        raise ValueError(f"logp, old_logp, mask must all be [B, T]; got {tuple(logp.shape)}, "
                         f"{tuple(old_logp.shape)}, {tuple(mask.shape)}.")
    if advantages.shape not in (logp.shape[:1], logp.shape):
        raise ValueError(f"advantages must be [B] or [B, T]; got {tuple(advantages.shape)}.")
    if loss_type == "cispo" and epsilon_high is None:
        raise ValueError("loss_type='cispo' needs epsilon_high, an absolute cap on the IS "
                         "ratio (not 1 + eps); TRL and ScaleRL recommend epsilon_high=5.0.")
    if beta != 0.0 and ref_logp is None:
        raise ValueError(f"beta={beta} needs ref_logp (log-probs under the reference model).")


def _surrogate(ratio, adv, logp, loss_type, eps_low, eps_high, delta):
    """Per-token policy loss and the (low, high) clip indicators, TRL's definitions."""
    none = torch.zeros_like(ratio * adv, dtype=torch.bool)
    if loss_type == "reinforce":
        return -adv * logp, none, none  # [B, T]: grad = -A grad log pi
    if loss_type == "cispo":
        w = ratio.clamp(max=eps_high).detach()  # clipped IS weight, no gradient through it
        return -w * adv * logp, none, (ratio > eps_high) & (adv > 0)
    clipped = ratio.clamp(1 - eps_low, 1 + eps_high)
    r1 = ratio if delta is None else ratio.clamp(max=delta)  # INTELLECT-2 two-sided clip
    loss = -torch.min(r1 * adv, clipped * adv)
    return loss, (ratio < 1 - eps_low) & (adv < 0), (ratio > 1 + eps_high) & (adv > 0)


def _mean(x, mask, level):
    """Masked token mean; per-sequence quantities ([B, 1], GSPO) average over sequences (TRL)."""
    x = x.float()
    if level == "sequence" and x.shape[-1] == 1:
        return x.mean()
    x = x.expand_as(mask)
    return (x * mask).sum() / mask.sum().clamp(min=1.0)


def _ratio_stats(ratio, mask):
    """Mean/min/max of the ratio over valid tokens (or valid sequences); 1.0 when none is valid."""
    valid = mask.bool() if ratio.shape == mask.shape else mask.sum(-1, keepdim=True) > 0
    n = valid.sum()
    one = torch.ones((), dtype=ratio.dtype)
    mean = torch.where(valid, ratio, 0 * one).sum() / n.clamp(min=1)
    lo = torch.where(valid, ratio, torch.full_like(ratio, float("inf"))).amin()
    hi = torch.where(valid, ratio, torch.full_like(ratio, -float("inf"))).amax()
    return {"ratio/mean": torch.where(n > 0, mean, one), "ratio/min": torch.where(n > 0, lo, one),
            "ratio/max": torch.where(n > 0, hi, one)}


def _kl_term(logp, ref_logp, ratio, estimator, correction):
    """Per-token KL for the loss; the IS weight keeps its gradient only for k1/k3 (see header)."""
    kl = kl_estimate(logp, ref_logp, estimator)  # [B, T]
    if not correction:
        return kl
    w = ratio if estimator in ("k1", "k3") else ratio.detach()  # [B, T] or [B, 1]
    return kl * w


def policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
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
    Sources: PPO (1707.06347), DeepSeekMath (2402.03300), DAPO, Dr. GRPO, CISPO (2506.13585);
    equal to TRL 1.16 ``GRPOTrainer._compute_loss`` (tests/test_core_trl_parity.py).

    Returns (loss, stats): stats holds detached 0-d tensors ``clip/ratio_low``,
    ``clip/ratio_high``, ``clip/region`` (fractions of valid tokens; of sequences at the sequence
    level, as TRL; ``clip/delta`` too when ``delta`` is set), ``ratio/mean|min|max``, ``loss/policy``, ``loss/kl`` and, when ref_logp is
    given, ``kl`` (mean of the KL term as in the loss) and ``kl/k1``, ``kl/k2``, ``kl/k3``;
    ``stats["per_token"]`` is a dict of detached [B, T] tensors: ratio, clipped, weight, loss
    (and k1, k2, k3 with ref_logp), for heatmaps.

    >>> lp = torch.log(torch.tensor([[0.5, 0.5], [0.2, 1.0]])).requires_grad_()
    >>> loss, st = policy_loss(lp, lp.detach(), torch.tensor([1.0, -1.0]), torch.ones(2, 2))
    >>> loss, st["clip/region"]  # ratio 1: loss = -mean(A) = 0, nothing clipped
    (tensor(0., grad_fn=<SumBackward0>), tensor(0.))
    """
    _check(logp, old_logp, advantages, mask, loss_type, importance_sampling_level, epsilon_high,
           beta, ref_logp)
    level, mask = importance_sampling_level, mask.to(logp.dtype)  # [B, T]
    adv = advantages.unsqueeze(-1) if advantages.dim() == 1 else advantages  # [B, 1] or [B, T]
    log_ratio = logp - old_logp  # [B, T]
    if level == "sequence":  # GSPO: length-normalised sequence ratio
        log_ratio = (log_ratio * mask).sum(-1, keepdim=True) / mask.sum(-1, keepdim=True).clamp(min=1)
    ratio = safe_exp(log_ratio)  # [B, T] or [B, 1]
    eps_high = epsilon if epsilon_high is None else epsilon_high
    pg, low, high = _surrogate(ratio, adv, logp, loss_type, epsilon, eps_high, delta)  # [B, T|1]
    w = token_weights(mask, loss_type, max_completion_length, num_items_in_batch)  # [B, T]
    per_token = {"ratio": ratio.expand_as(mask), "clipped": (low | high).expand_as(mask).float(),
                 "weight": w, "loss": pg.expand_as(mask)}
    stats = {"clip/ratio_low": _mean(low, mask, level), "clip/ratio_high": _mean(high, mask, level),
             "clip/region": _mean(low | high, mask, level), **_ratio_stats(ratio, mask),
             "loss/policy": (w * pg).sum(), "loss/kl": torch.zeros(())}
    if delta is not None:  # tokens whose negative-advantage loss the delta cap bounds
        stats["clip/delta"] = _mean((ratio > delta) & (adv < 0), mask, level)
    loss = stats["loss/policy"]
    if ref_logp is not None:
        kl = _kl_term(logp, ref_logp, ratio, kl_estimator, kl_is_correction)  # [B, T]
        stats["kl"] = _mean(kl, mask, "token")
        for name, fn in (("k1", kl_k1), ("k2", kl_k2), ("k3", kl_k3)):
            per_token[name] = fn(logp, ref_logp)  # [B, T]
            stats[f"kl/{name}"] = _mean(per_token[name], mask, "token")
        if beta != 0.0:
            stats["loss/kl"] = beta * (w * kl).sum()
            loss = loss + stats["loss/kl"]
            per_token["loss"] = pg + beta * kl  # [B, T]
    stats = {k: v.detach() for k, v in stats.items()}
    stats["per_token"] = {k: v.detach() for k, v in per_token.items()}
    return loss, stats
