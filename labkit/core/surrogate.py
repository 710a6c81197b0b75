"""The pieces of the GRPO-family per-token loss, each ``(value, info)``; ``policy_loss`` sums them:

    l_{i,t} = clipped_surrogate(rho_{i,t}, A_i) + beta * kl_penalty(rho_{i,t}, KL_{i,t})
    rho     = importance_ratio(log pi_theta, log pi_old)   (per token, or GSPO's per sequence)

``info`` holds detached 0-d stats (TRL's metric names) and, under ``"per_token"``, detached
per-token tensors for heatmaps. Shapes: B sequences, T completion tokens; ``mask`` [B, T] is 0/1.
Stats average over valid tokens (``mask != 0``); garbage at padding (-inf, NaN) never reaches them.
The departures from the papers and TRL are listed in ``labkit.core.policy``.
"""

from __future__ import annotations

import torch

from labkit.core.kl import kl_estimate, kl_k1, kl_k2, kl_k3, kl_k3_is, safe_exp
from labkit.core.numerics import float_dtype, where_valid
from labkit.core.options import IS_LEVELS, KL_ESTIMATORS, LOSS_TYPES, choose


def _mean(x: torch.Tensor, mask: torch.Tensor, level: str = "token") -> torch.Tensor:
    """Masked token mean; per-sequence quantities ([B, 1], GSPO) average over sequences (TRL)."""
    x = x.to(mask.dtype)
    if level == "sequence" and x.shape[-1] == 1:
        return x.mean()
    return where_valid(x.expand_as(mask), mask).sum() / mask.sum().clamp(min=1.0)


def _detach(info: dict) -> dict:
    return {k: _detach(v) if isinstance(v, dict) else v.detach() for k, v in info.items()}


def _ratio_stats(ratio: torch.Tensor, mask: torch.Tensor) -> dict:
    """Mean/min/max of the ratio over valid tokens (or valid sequences); 1.0 when none is valid."""
    valid = mask != 0 if ratio.shape == mask.shape else mask.sum(-1, keepdim=True) > 0
    n = valid.sum()
    one = torch.ones((), dtype=ratio.dtype, device=ratio.device)
    mean = torch.where(valid, ratio, 0 * one).sum() / n.clamp(min=1)
    lo = torch.where(valid, ratio, torch.full_like(ratio, float("inf"))).amin()
    hi = torch.where(valid, ratio, torch.full_like(ratio, -float("inf"))).amax()
    return {
        "ratio/mean": torch.where(n > 0, mean, one),
        "ratio/min": torch.where(n > 0, lo, one),
        "ratio/max": torch.where(n > 0, hi, one),
    }


def importance_ratio(
    logp: torch.Tensor, old_logp: torch.Tensor, mask: torch.Tensor, level: str = "token"
) -> tuple[torch.Tensor, dict]:
    """rho = pi_theta / pi_old: per token [B, T] (PPO, GRPO), or GSPO's (2507.18071) sequence
    ratio exp(mean_t log rho_t) over the valid tokens, [B, 1] (``level="sequence"``).

    exp sees the log-ratio clamped at 20 (``labkit.core.kl.safe_exp``). info: ``ratio/mean``,
    ``ratio/min``, ``ratio/max`` over valid tokens (valid sequences); 1 when none is valid; and
    ``kl/old``, the approximate KL(pi_old || pi_theta) = mean over valid tokens of
    k3 = (rho_t - 1) - log rho_t (cleanrl's ``approx_kl``; per token at either level).

    >>> rho, info = importance_ratio(torch.zeros(1, 2), torch.tensor([[0.0, -1.0]]), torch.ones(1, 2))
    >>> rho, info["ratio/max"]
    (tensor([[1.0000, 2.7183]]), tensor(2.7183))
    """
    choose("importance_sampling_level", level, IS_LEVELS)
    mask = mask.to(float_dtype(logp, old_logp))  # [B, T]
    log_ratio = logp - old_logp  # [B, T]
    if level == "sequence":  # GSPO (2507.18071): length-normalised sequence ratio
        n = mask.sum(-1, keepdim=True).clamp(min=1)  # [B, 1]
        log_ratio = where_valid(log_ratio, mask).sum(-1, keepdim=True) / n  # [B, 1]
    ratio = safe_exp(log_ratio)  # [B, T] or [B, 1]
    # approx KL(pi_old || pi_theta): k3 of the per-token ratio under pi_old's samples (cleanrl)
    kl_old = _mean(kl_k3(old_logp.detach(), logp.detach()), mask)  # []
    return ratio, _detach({**_ratio_stats(ratio, mask), "kl/old": kl_old})


def clipped_surrogate(
    ratio: torch.Tensor,
    adv: torch.Tensor,
    logp: torch.Tensor,
    mask: torch.Tensor,
    *,
    loss_type: str = "grpo",
    epsilon: float = 0.2,
    epsilon_high: float | None = None,
    delta: float | None = None,
    level: str = "token",
) -> tuple[torch.Tensor, dict]:
    """Per-token policy loss l_{i,t} (before aggregation) and its clip fractions, TRL's definitions:

    PPO / GRPO: -min(r1 A, clip(rho, 1 - eps, 1 + eps_high) A), r1 = min(rho, delta) when
                ``delta`` is set (INTELLECT-2's two-sided clip, 2505.07291), else rho
    CISPO:      -sg(min(rho, eps_high)) A log pi_theta   (2506.13585; eps_high absolute, required)
    REINFORCE:  -A log pi_theta   (rho unused: on-policy by assumption)

    ratio: [B, T] or [B, 1]; adv: [B], [B, 1] or [B, T]; logp: [B, T]. info: ``clip/ratio_low``
    (rho < 1 - eps with A < 0), ``clip/ratio_high`` (rho above the cap with A > 0),
    ``clip/region`` (either), ``clip/delta`` (rho > delta with A < 0, when delta is set): fractions
    of valid tokens, or of sequences when ``level="sequence"`` and rho, A are per sequence (TRL).

    >>> rho, A = torch.tensor([[1.5, 0.5]]), torch.tensor([[1.0]])
    >>> loss, info = clipped_surrogate(rho, A, torch.zeros(1, 2), torch.ones(1, 2))
    >>> loss, info["clip/ratio_high"]  # 1.5 is clipped to 1.2
    (tensor([[-1.2000, -0.5000]]), tensor(0.5000))
    """
    choose("loss_type", loss_type, LOSS_TYPES)
    if loss_type == "cispo" and epsilon_high is None:
        raise ValueError(
            "loss_type='cispo' needs epsilon_high, an absolute cap on the IS "
            "ratio (not 1 + eps); TRL and ScaleRL recommend epsilon_high=5.0."
        )
    eps_low, eps_high = epsilon, epsilon if epsilon_high is None else epsilon_high
    mask = mask.to(float_dtype(ratio, adv, logp))  # [B, T]
    adv = adv.unsqueeze(-1) if adv.dim() == 1 else adv  # [B, 1] or [B, T]
    none = torch.zeros_like(ratio * adv, dtype=torch.bool)  # [B, T] or [B, 1]
    if loss_type == "reinforce":  # REINFORCE (Williams 1992)
        loss, low, high = -adv * logp, none, none  # [B, T]: grad = -A grad log pi
    elif loss_type == "cispo":  # CISPO (MiniMax-M1, 2506.13585)
        w = ratio.clamp(max=eps_high).detach()  # clipped IS weight, no gradient through it
        loss, low, high = -w * adv * logp, none, (ratio > eps_high) & (adv > 0)  # [B, T]
    else:  # PPO-clip (1707.06347); GRPO (2402.03300)
        clipped = ratio.clamp(1 - eps_low, 1 + eps_high)  # clip-higher: DAPO 2503.14476
        r1 = ratio if delta is None else ratio.clamp(max=delta)  # INTELLECT-2 (2505.07291)
        loss = -torch.min(r1 * adv, clipped * adv)  # [B, T] or [B, 1]
        low, high = (ratio < 1 - eps_low) & (adv < 0), (ratio > 1 + eps_high) & (adv > 0)
    info = {
        "clip/ratio_low": _mean(low, mask, level),
        "clip/ratio_high": _mean(high, mask, level),
        "clip/region": _mean(low | high, mask, level),
    }
    if delta is not None:  # tokens whose negative-advantage loss the delta cap bounds
        info["clip/delta"] = _mean((ratio > delta) & (adv < 0), mask, level)
    info["per_token"] = {"clipped": (low | high).expand_as(mask).to(mask.dtype)}  # [B, T]
    return loss, _detach(info)


def kl_penalty(
    logp: torch.Tensor,
    ref_logp: torch.Tensor,
    ratio: torch.Tensor,
    mask: torch.Tensor,
    *,
    estimator: str = "k3",
    is_correction: bool = True,
    clamp: float | None = None,
) -> tuple[torch.Tensor, dict]:
    """Per-token KL term of the loss, KL_{i,t} = ``estimator`` (k3 in GRPO), times rho when
    ``is_correction`` (TRL ``use_bias_correction_kl``; DeepSeek-V3.2, 2512.02556).

    For k1 and k3 rho keeps its gradient: E_{pi_old}[grad(rho k)] is then the gradient of the
    reverse KL(pi_theta || pi_ref) (plain k3's mean gradient is the *forward* KL's). k2 and k3_st
    already have the KL gradient, so their rho is detached (an importance weight; TRL has no k2:
    labkit's choice). ``clamp`` bounds k3 as verl's ``low_var_kl`` (see ``kl_k3``); default off.
    ratio: [B, T] or [B, 1]. info: ``kl`` (mean of this term over valid tokens) and ``kl/k1``,
    ``kl/k2``, ``kl/k3`` (plain estimators, means), ``per_token`` k1, k2, k3 [B, T].

    >>> kl, info = kl_penalty(torch.tensor([[-1.0]]), torch.tensor([[-2.0]]), torch.ones(1, 1),
    ...                       torch.ones(1, 1))
    >>> kl, info["kl/k1"]
    (tensor([[0.3679]]), tensor(1.))
    """
    choose("kl_estimator", estimator, KL_ESTIMATORS)
    mask = mask.to(float_dtype(logp, ref_logp, ratio))  # [B, T]
    if is_correction and estimator == "k3":  # IS-corrected k3: DeepSeek-V3.2, 2512.02556
        kl = kl_k3_is(logp, ref_logp, ratio=ratio, clamp=clamp)  # [B, T]
    else:
        kl = kl_estimate(logp, ref_logp, estimator, clamp)  # [B, T]
        if is_correction:
            kl = kl * (ratio if estimator == "k1" else ratio.detach())  # [B, T]
    info, per_token = {"kl": _mean(kl, mask)}, {}
    for name, fn in (("k1", kl_k1), ("k2", kl_k2), ("k3", kl_k3)):
        per_token[name] = fn(logp, ref_logp)  # [B, T]
        info[f"kl/{name}"] = _mean(per_token[name], mask)
    info["per_token"] = per_token
    return kl, _detach(info)
