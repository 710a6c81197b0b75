"""Truncated importance sampling (TIS) for the sampler/trainer mismatch (Yao et al. 2025, "Your
efficient RL framework secretly brings you off-policy RL training", fengyao.notion.site/off-policy-rl;
TRL 1.16 ``vllm_importance_sampling_correction``).

The tokens were drawn from pi_sample (the sampler: a KV-cached decode, another precision, vLLM),
but the policy-gradient estimator assumes they came from pi_train_old (the trainer's full forward
of the same weights). The two differ, so the "on-policy" update is off-policy. TIS weights each
token's policy loss by the truncated ratio

    w_t = min(pi_train_old(o_t) / pi_sample(o_t), C)      (detached; C = ``cap``)

Modes (TRL's ``vllm_importance_sampling_mode``): ``token_truncate`` (the above), ``token_mask``
(w_t = ratio, or 0 where ratio > C), ``sequence_truncate`` / ``sequence_mask`` (one ratio per
sequence, the product over its tokens: exp(sum_t log ratio_t), truncated or masked likewise).
Matches TRL's ``GRPOTrainer._generate_and_score_completions`` (trl/trainer/grpo_trainer.py
1.16.0, lines 2660-2706: diff masked, NaN -> 0, exp, clamp or mask_fill) with C_min = None.
"""

from __future__ import annotations

import torch

from labkit.core.numerics import float_dtype, where_valid
from labkit.core.options import TIS_MODES, choose


def truncated_is_weight(
    train_logp: torch.Tensor,
    sample_logp: torch.Tensor,
    mask: torch.Tensor,
    cap: float,
    mode: str = "token_truncate",
) -> tuple[torch.Tensor, dict]:
    """TIS weight w = min(pi_train_old / pi_sample, C) per token [B, T] (``token_*``) or per
    sequence [B, 1] (``sequence_*``), detached; ``*_mask`` modes zero ratios above C instead.

    train_logp, sample_logp, mask: [B, T] (padding may hold anything, NaN or -inf). Source:
    Yao et al. 2025; TRL 1.16 ``vllm_importance_sampling_mode`` (lines 2660-2706). Stats (0-d,
    detached): ``tis/weight_mean``, ``tis/weight_min``, ``tis/weight_max`` over valid tokens (or
    sequences), ``tis/clipped_frac`` (ratio > C: truncated or masked), ``tis/logp_gap`` (mean
    |log pi_train_old - log pi_sample| over valid tokens, TRL's sampling_logp_difference/mean).

    >>> w, st = truncated_is_weight(torch.log(torch.tensor([[0.5, 0.9]])),
    ...                             torch.log(torch.tensor([[0.1, 0.9]])), torch.ones(1, 2), 2.0)
    >>> w, st["tis/clipped_frac"]  # 0.5 / 0.1 = 5 is truncated at C = 2
    (tensor([[2., 1.]]), tensor(0.5000))
    """
    choose("tis_mode", mode, TIS_MODES)
    if not cap > 0:
        raise ValueError(f"tis_cap={cap}: the truncation C must be > 0 (Yao et al. use 2, TRL 3)")
    dtype = float_dtype(train_logp, sample_logp)
    mask = mask.to(dtype)  # [B, T]
    diff = where_valid(train_logp.detach().to(dtype) - sample_logp.detach().to(dtype), mask)
    diff = torch.nan_to_num(diff, nan=0.0)  # [B, T] a NaN sampler log-prob: ratio 1 (TRL)
    per_seq = mode.startswith("sequence")
    valid = mask.sum(-1, keepdim=True) > 0 if per_seq else mask != 0  # [B, 1] or [B, T]
    ratio = (diff.sum(-1, keepdim=True) if per_seq else diff).exp()  # [B, 1] or [B, T]
    over = ratio > cap
    w = ratio.clamp(max=cap) if mode.endswith("truncate") else ratio.masked_fill(over, 0.0)
    n = valid.sum().clamp(min=1)
    big = torch.full_like(w, float("inf"))
    stats = {
        "tis/weight_mean": torch.where(valid, w, 0.0).sum() / n,
        "tis/weight_min": torch.where(valid, w, big).amin(),
        "tis/weight_max": torch.where(valid, w, -big).amax(),
        "tis/clipped_frac": (over & valid).sum() / n,
        "tis/logp_gap": diff.abs().sum() / mask.sum().clamp(min=1),
    }
    return w, stats
