"""Advantages: group z-scores (GRPO), leave-one-out (RLOO), REINFORCE baselines, GAE, whitening.

Shapes: B sequences (B = number of prompts x G generations, grouped contiguously, as TRL lays
them out), G generations per prompt, T time steps / tokens.

Departures from the papers, on purpose:
- ``group_advantages`` adds ``eps = 1e-4`` to the std, as TRL does, so a group whose rewards are
  all equal gets zero advantages instead of 0/0 = NaN.
- ``group_advantages`` treats a group whose rewards agree to within float rounding as all-equal
  (advantages exactly 0): max - min <= G * eps_dtype * max|r|, the tolerance numpy's
  ``matrix_rank`` uses for a zero singular value (S.max() * max(M, N) * eps). Without it, ties
  that rounding broke (0.1 + 0.2 vs 0.3; a mean that is one ulp off) came out as +-1 advantages
  with ``eps=0``. TRL has no such test; it differs only for such groups (there TRL gives
  rounding noise / 1e-4).
- ``gae`` and ``discounted_returns`` take a mask whose valid steps are a prefix of each row
  (padded episodes / completions); the recursion is cut at the end of that prefix and bootstraps
  from ``next_value`` there.
- Masks select, never multiply (``labkit.core.numerics``): NaN or inf at padding cannot leak.
  fp16/bf16 are computed in float32, float64 stays float64.
"""

from __future__ import annotations

import torch

from labkit.core.numerics import float_dtype, where_valid
from labkit.core.options import BASELINES, SCALE_REWARDS, STD_KINDS, choose


def _std(x: torch.Tensor, dim: int | None, std: str) -> torch.Tensor:
    """Std along ``dim`` (all elements when None), keepdim; n-1 or n, never NaN for one sample."""
    choose("std", std, STD_KINDS)
    n = x.numel() if dim is None else x.shape[dim]
    mean = x.mean() if dim is None else x.mean(dim, keepdim=True)
    sq = ((x - mean) ** 2).sum() if dim is None else ((x - mean) ** 2).sum(dim, keepdim=True)
    dof = max(n - 1, 1) if std == "unbiased" else max(n, 1)  # one sample: std 0, not NaN
    return (sq / dof).sqrt()


def _grouped(rewards: torch.Tensor, num_generations: int) -> torch.Tensor:
    if rewards.dim() != 1 or num_generations < 1 or rewards.numel() % num_generations:
        raise ValueError(
            f"rewards must be 1-D with a length divisible by num_generations={num_generations}; "
            f"got shape {tuple(rewards.shape)}. Lay out the G completions of a prompt together."
        )
    return rewards.to(float_dtype(rewards)).view(-1, num_generations)  # [B/G, G]


def _tied(r: torch.Tensor) -> torch.Tensor:
    """[B/G, G] -> [B/G, 1]: groups whose spread is within float rounding of their scale,
    max - min <= G eps max|r| (numpy ``matrix_rank``'s tolerance for a zero singular value)."""
    G, eps = r.shape[1], torch.finfo(r.dtype).eps
    spread = r.amax(1, keepdim=True) - r.amin(1, keepdim=True)  # [B/G, 1]
    return spread <= G * eps * r.abs().amax(1, keepdim=True)


def group_advantages(
    rewards: torch.Tensor,
    num_generations: int,
    scale_rewards: str = "group",
    std: str = "unbiased",
    eps: float = 1e-4,
) -> torch.Tensor:
    """GRPO's group-relative advantage A_i = (r_i - mean(r_group)) / (std + eps).

    Source: DeepSeekMath (2402.03300) sec. 4.1.2 (outcome supervision); Dr. GRPO (2503.20783) drops
    the std (``scale_rewards="none"``); TRL's ``scale_rewards="batch"`` keeps the group mean but
    divides by the std of the whole batch. ``std="unbiased"`` (n-1, TRL's and torch's default)
    or ``"population"`` (n). An all-equal group gives exactly zero (never NaN), also when its
    rewards differ by rounding only (``_tied``: max - min <= G eps_dtype max|r|; see the header).

    rewards: [B] with B = prompts x G, groups contiguous -> advantages [B].

    >>> r = torch.tensor([1., 0., 0., 1.])
    >>> group_advantages(r, 4, std="population", eps=0.0)
    tensor([ 1., -1., -1.,  1.])
    >>> group_advantages(r, 4)  # n-1 std, eps 1e-4: TRL's numbers
    tensor([ 0.8659, -0.8659, -0.8659,  0.8659])
    >>> group_advantages(r, 4, scale_rewards="none")
    tensor([ 0.5000, -0.5000, -0.5000,  0.5000])
    >>> group_advantages(torch.ones(4), 4)
    tensor([0., 0., 0., 0.])
    >>> group_advantages(torch.tensor([0.1 + 0.2, 0.3, 0.3], dtype=torch.float64), 3, eps=0.0)
    tensor([0., 0., 0.], dtype=torch.float64)
    """
    choose("scale_rewards", scale_rewards, SCALE_REWARDS)
    r = _grouped(rewards, num_generations)  # [B/G, G]
    centered = torch.where(_tied(r), 0.0, r - r.mean(1, keepdim=True))  # [B/G, G]
    if scale_rewards == "none":  # Dr. GRPO (2503.20783): no std scaling
        choose("std", std, STD_KINDS)
        return centered.reshape(-1)  # [B]
    # group: DeepSeekMath (2402.03300) sec. 4.1.2; batch: TRL's scale_rewards="batch"
    sigma = _std(r, 1, std) if scale_rewards == "group" else _std(r, None, std)  # [B/G, 1] or []
    # sigma == 0 (an all-equal group): 0, even with eps = 0; elsewhere exactly TRL's formula
    adv = torch.where(sigma > 0, centered / (sigma + eps), torch.zeros_like(centered))  # [B/G, G]
    return adv.reshape(-1)  # [B]


def rloo_advantages(rewards: torch.Tensor, num_generations: int) -> torch.Tensor:
    """REINFORCE leave-one-out: A_i = r_i - 1/(G-1) sum_{j != i} r_j = G/(G-1) (r_i - mean).

    Source: Kool et al. 2019 "Buy 4 REINFORCE samples, get a baseline for free!"; Ahmadian et
    al. 2024 (2402.14740). The baseline does not depend on r_i, so the estimate stays unbiased.

    rewards: [B] (groups of G contiguous) -> [B]. Needs G >= 2.

    >>> rloo_advantages(torch.tensor([1., 0., 0., 1.]), 4)
    tensor([ 0.6667, -0.6667, -0.6667,  0.6667])
    """
    if num_generations < 2:
        raise ValueError(f"num_generations={num_generations}: RLOO needs at least 2 per group.")
    r = _grouped(rewards, num_generations)  # [B/G, G]
    baseline = (r.sum(1, keepdim=True) - r) / (num_generations - 1)  # [B/G, G]
    return (r - baseline).reshape(-1)  # [B]


def reinforce_advantages(
    rewards: torch.Tensor, num_generations: int = 1, baseline: str = "none"
) -> torch.Tensor:
    """REINFORCE with a baseline b: A_i = r_i - b.

    ``baseline``: "none" (b = 0, plain REINFORCE, Williams 1992), "batch_mean" (b = mean over
    the batch), "group_mean" (b = mean of the prompt's group: includes r_i itself, so it is
    biased by a factor (G-1)/G), "leave_one_out" (RLOO, unbiased). rewards: [B] -> [B].

    >>> r = torch.tensor([1., 0., 0., 0.])
    >>> reinforce_advantages(r, 2, "group_mean")
    tensor([ 0.5000, -0.5000,  0.0000,  0.0000])
    >>> reinforce_advantages(r, 2, "leave_one_out")
    tensor([ 1., -1.,  0.,  0.])
    """
    choose("baseline", baseline, BASELINES)
    r = _grouped(rewards, num_generations)  # [B/G, G]
    if baseline == "leave_one_out":  # RLOO (2402.14740)
        return rloo_advantages(rewards, num_generations)
    if baseline == "group_mean":
        return (r - r.mean(1, keepdim=True)).reshape(-1)  # [B]
    b = r.mean() if baseline == "batch_mean" else 0.0
    return (r - b).reshape(-1)  # [B]


def _check_prefix(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    mask = mask.to(dtype)  # [B, T]
    if mask.dim() != 2 or (mask[:, 1:] > mask[:, :-1]).any():
        raise ValueError(
            "mask must be [B, T] with the valid steps of each row a prefix (1...1 0...0); "
            "left-padded rows must be shifted left first."
        )
    return mask


def gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    gamma: float,
    lam: float,
    next_value: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation: A_t = sum_l (gamma lam)^l delta_{t+l}.

    delta_t = r_t + gamma V_{t+1} - V_t, with V after the last valid step = ``next_value``
    (V(s_T) bootstrap, [B]; None = 0, a terminal state). The sum runs inside the valid prefix of
    each row. lam = 0 gives the TD error, lam = 1 the Monte-Carlo return minus V.
    Source: Schulman et al. 2015 (1506.02438) eq. 16; computed by the backward recursion
    A_t = delta_t + gamma lam A_{t+1}, vectorised over the batch (cleanrl's ppo.py).

    rewards, values, mask: [B, T] float (mask: valid steps a prefix) ->
    (advantages [B, T], returns = advantages + values [B, T]); both 0 where mask == 0.

    >>> A, R = gae(torch.tensor([[0., 1.]]), torch.tensor([[.5, .5]]), torch.ones(1, 2), 1., 1.)
    >>> A, R
    (tensor([[0.5000, 0.5000]]), tensor([[1., 1.]]))
    """
    dtype = float_dtype(rewards, values)
    mask = _check_prefix(mask, dtype)  # [B, T]
    rewards, values = where_valid(rewards.to(dtype), mask), where_valid(values.to(dtype), mask)
    B, T = rewards.shape
    zeros = rewards.new_zeros(B)  # [B]
    v_end = zeros if next_value is None else next_value.to(dtype).reshape(B)  # [B]
    adv = rewards.new_zeros(B, T)  # [B, T]
    a_next = zeros  # [B]: A_{t+1}, 0 past the valid prefix
    for t in reversed(range(T)):
        m_next = mask[:, t + 1] if t + 1 < T else zeros  # [B]: is t+1 still valid?
        v_next = torch.where(m_next != 0, values[:, min(t + 1, T - 1)], v_end)  # [B]
        delta = rewards[:, t] + gamma * v_next - values[:, t]  # [B]
        a_next = where_valid(delta + gamma * lam * m_next * a_next, mask[:, t])  # [B]
        adv[:, t] = a_next
    return adv, where_valid(adv + values, mask)


def discounted_returns(rewards: torch.Tensor, mask: torch.Tensor, gamma: float) -> torch.Tensor:
    """Reward-to-go G_t = sum_l gamma^l r_{t+l} within the valid prefix; 0 where mask == 0.

    Source: Sutton & Barto eq. 3.8; REINFORCE's return (Williams 1992).
    rewards, mask: [B, T] -> [B, T].

    >>> discounted_returns(torch.tensor([[1., 0., 2., 5.]]), torch.tensor([[1, 1, 1, 0]]), 0.5)
    tensor([[1.5000, 1.0000, 2.0000, 0.0000]])
    """
    mask = _check_prefix(mask, float_dtype(rewards))  # [B, T]
    rewards = where_valid(rewards.to(mask.dtype), mask)  # [B, T]
    B, T = rewards.shape
    out = rewards.new_zeros(B, T)  # [B, T]
    g = rewards.new_zeros(B)  # [B]
    for t in reversed(range(T)):
        g = rewards[:, t] + gamma * g  # [B]; rewards past the prefix are 0
        out[:, t] = g
    return where_valid(out, mask)


def whiten(
    x: torch.Tensor, mask: torch.Tensor, shift_mean: bool = True, std: str = "unbiased"
) -> torch.Tensor:
    """(x - mean) / sqrt(var + 1e-8) over the entries where mask is 1; 0 where mask is 0.

    The PPO-for-LLMs normalisation of advantages (TRL's ``masked_whiten``; cleanrl's
    ``norm_adv``). ``shift_mean=False`` keeps the mean (for rewards). ``std``: "unbiased" (n-1)
    or "population" (n). x, mask: same shape.

    >>> whiten(torch.tensor([1., 2., 3., 100.]), torch.tensor([1, 1, 1, 0]))
    tensor([-1.,  0.,  1.,  0.])
    """
    choose("std", std, STD_KINDS)
    x = where_valid(x.to(float_dtype(x)), mask)  # 0 at padding, whatever it held
    mask = mask.to(x.dtype)
    n = mask.sum()
    mean = x.sum() / n.clamp(min=1)
    dof = (n - 1).clamp(min=1) if std == "unbiased" else n.clamp(min=1)
    var = (where_valid(x - mean, mask) ** 2).sum() / dof
    out = (x - mean) * torch.rsqrt(var + 1e-8)
    if not shift_mean:
        out = out + mean
    return where_valid(out, mask)
