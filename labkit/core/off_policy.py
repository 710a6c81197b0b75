"""DeepSeek-V3.2's off-policy sequence masking (DeepSeek-AI 2025, "DeepSeek-V3.2: Pushing the
Frontier of Open Large Language Models", arXiv 2512.02556, sec. 3.1 "Off-Policy Sequence Masking").

The GRPO objective is multiplied, per token, by

    M_{i,t} = 0  if  A_{i,t} < 0  and  (1/|o_i|) sum_t log(pi_old(o_t) / pi_theta(o_t)) > delta
    M_{i,t} = 1  otherwise,

so a sequence with a negative advantage whose policy has drifted past delta (a per-token
average of k1 = log pi_old / pi_theta, a sample estimate of KL(pi_old || pi_theta)) stops
pushing the policy. The report's reason: the model learns most from its own mistakes, and
highly off-policy negative samples can hurt more than help. M multiplies the policy term only
(the KL penalty stays).

Where labkit departs from the report, and why:
- the report's pi_old is the sampling probability returned by the inference engine, so the
  divergence counts both the train/inference mismatch and policy staleness. labkit samples
  with the trained model itself, so pi_old is the trainer's recomputation at sampling time
  (``GRPOTrainer.reference_logprobs``); the two agree up to float noise, and, with top-p/top-k,
  only when ``truncated_logprobs=True`` (the keep-sampling-mask trick).
- the divergence is recomputed at every inner update against the current pi_theta (the
  report's equation has pi_theta in it; it does not say more). At the first update pi_theta =
  pi_old, so with delta >= 0 nothing is masked there.
"""

from __future__ import annotations

import torch

from labkit.core.numerics import float_dtype, where_valid


def off_policy_sequence_mask(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    adv: torch.Tensor,
    mask: torch.Tensor,
    delta: float,
) -> torch.Tensor:
    """M of DeepSeek-V3.2's off-policy sequence masking, 1 = keep, 0 = drop:

    M_{i,t} = 0 if A_{i,t} < 0 and (1/|o_i|) sum_t (log pi_old - log pi_theta) > delta, else 1.

    logp, old_logp, mask: [B, T] (padding may hold anything); adv: [B] (one per sequence, as
    GRPO) or [B, T]. Returns a detached float mask [B, 1] (adv [B]) or [B, T] (adv [B, T]).
    A sequence with no valid token has divergence 0 (kept). Source: arXiv 2512.02556, sec. 3.1.

    >>> old = torch.log(torch.tensor([[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]]))
    >>> new = torch.log(torch.tensor([[0.1, 0.5], [0.1, 0.5], [0.5, 0.5]]))
    >>> off_policy_sequence_mask(new, old, torch.tensor([-1.0, 1.0, -1.0]), torch.ones(3, 2), 0.5)
    tensor([[0.],
            [1.],
            [1.]])
    """
    if delta < 0:
        raise ValueError(f"delta={delta}: the divergence threshold must be >= 0 (e.g. 0.1)")
    dtype = float_dtype(logp, old_logp)
    mask = mask.to(dtype)  # [B, T]
    log_ratio = where_valid(old_logp.detach().to(dtype) - logp.detach().to(dtype), mask)  # [B, T]
    div = log_ratio.sum(-1, keepdim=True) / mask.sum(-1, keepdim=True).clamp(min=1)  # [B, 1]
    adv = adv.detach().to(dtype)
    adv = adv.unsqueeze(-1) if adv.dim() == 1 else adv  # [B, 1] or [B, T]
    drop = (adv < 0) & (div > delta)  # [B, 1] or [B, T]
    return (~drop).to(dtype)
