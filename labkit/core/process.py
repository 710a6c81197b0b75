"""Process supervision as tensors: per-step rewards placed on tokens (PPO) or turned into
per-token advantages (GRPO).

A completion of a reasoning task is cut into K steps; step k ends at token e_k and has a reward
r_k (its process label, or a PRM's score). Padding steps have ``valid`` = False.

- Dense rewards for PPO: r_t = sum_k r_k 1{t = e_k} (the reward arrives when the step ends).
- GRPO with process supervision (DeepSeekMath, Shao et al. 2024, arXiv 2402.03300, sec. 4.1.3):
  normalise every step reward by the mean and std of all step rewards of the group,
  r~_k = (r_k - mean(R)) / std(R); a token's advantage is the sum of the normalised rewards of
  the steps that end at or after it, A_t = sum_{k: e_k >= t} r~_k.
"""

from __future__ import annotations

import torch


def step_token_rewards(
    ends: torch.Tensor, rewards: torch.Tensor, valid: torch.Tensor, T: int
) -> torch.Tensor:
    """r_t = sum_k r_k 1{t = e_k}: [B, K] step ends, rewards and valid flags -> [B, T].

    >>> step_token_rewards(torch.tensor([[1, 3]]), torch.tensor([[0.5, 1.0]]),
    ...                    torch.tensor([[True, True]]), 4).tolist()
    [[0.0, 0.5, 0.0, 1.0]]
    """
    r = rewards * valid  # [B, K] padding steps give nothing
    out = torch.zeros(ends.shape[0], T, dtype=rewards.dtype, device=rewards.device)  # [B, T]
    return out.scatter_add(1, ends.clamp(0, T - 1), r)  # [B, T]


def process_advantages(
    ends: torch.Tensor,
    rewards: torch.Tensor,
    valid: torch.Tensor,
    G: int,
    T: int,
    eps: float = 1e-4,
) -> torch.Tensor:
    """DeepSeekMath's process-supervised GRPO advantage, A_t = sum_{k: e_k >= t} r~_k with
    r~_k = (r_k - mean(R_group)) / (std(R_group) + eps), R_group every valid step reward of the
    completion's group of G (2402.03300, sec. 4.1.3). [B, K] x3 -> [B, T].

    >>> e = torch.tensor([[0, 2], [2, 0]]); v = torch.tensor([[True, True], [True, False]])
    >>> A = process_advantages(e, torch.tensor([[1.0, 1.0], [0.0, 0.0]]), v, G=2, T=3)
    >>> (100 * A).round().tolist()
    [[115.0, 58.0, 58.0], [-115.0, -115.0, -115.0]]
    """
    B, K = rewards.shape
    r = rewards.view(B // G, G * K)  # [B/G, G*K]
    m = valid.view(B // G, G * K).to(rewards.dtype)  # [B/G, G*K]
    n = m.sum(-1, keepdim=True).clamp(min=1)  # [B/G, 1]
    mean = (r * m).sum(-1, keepdim=True) / n  # [B/G, 1]
    std = (((r - mean) ** 2 * m).sum(-1, keepdim=True) / (n - 1).clamp(min=1)).sqrt()  # [B/G, 1]
    r_norm = ((r - mean) / (std + eps) * m).view(B, K)  # [B, K]
    t = torch.arange(T, device=ends.device)  # [T]
    later = (ends[:, :, None] >= t[None, None, :]).to(rewards.dtype)  # [B, K, T]
    return (r_norm[:, :, None] * later).sum(1)  # [B, T]
