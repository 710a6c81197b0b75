"""DAPO's data-side tricks (Yu et al. 2025, 2503.14476): soft overlong punishment and the
group filter of dynamic sampling. Clip-higher and the token-level loss live in
``labkit.core.policy_loss`` (``epsilon_high``, ``loss_type="dapo"``); the sampling loop of
dynamic sampling is ``SamplingTrainer.collect`` and overlong filtering its ``loss_mask``
(``mask_truncated_completions``), both in ``labkit.algos.sampling``.
"""

from __future__ import annotations

import torch


def soft_overlong_penalty(
    lengths: torch.Tensor, max_len: int, buffer: int, penalty: float = 1.0
) -> torch.Tensor:
    """DAPO's soft overlong punishment (sec. 3.4): R_length(y) = 0 if |y| <= L_max - L_cache,
    ((L_max - L_cache) - |y|) / L_cache if L_max - L_cache < |y| <= L_max, -1 beyond; times
    ``penalty``. lengths: [B] tokens -> [B] (added to the reward).

    >>> soft_overlong_penalty(torch.tensor([4, 6, 8, 9]), max_len=8, buffer=4)
    tensor([ 0.0000, -0.5000, -1.0000, -1.0000])
    """
    if not 0 < buffer < max_len:
        raise ValueError(f"buffer={buffer}: use 0 < buffer < max_len={max_len}")
    over = (lengths.float() - (max_len - buffer)).clamp(min=0)  # [B] tokens into the buffer
    return (over / buffer).clamp(max=1.0) * -penalty + 0.0  # [B]; + 0.0 turns -0.0 into 0.0


def informative_groups(rewards: torch.Tensor, num_generations: int) -> torch.Tensor:
    """[B] bool: True for the completions of groups whose rewards do not all agree.

    Dynamic sampling keeps only these: a group with zero reward spread has zero group-relative
    advantage and gives no gradient (DAPO sec. 3.2's constraint 0 < |{correct}| < G).

    >>> informative_groups(torch.tensor([1., 1., 0., 1., 0., 0.]), 2)
    tensor([False, False,  True,  True, False, False])
    """
    groups = rewards.view(-1, num_generations)  # [B/G, G]
    spread = groups.max(1).values > groups.min(1).values  # [B/G]
    return spread.repeat_interleave(num_generations)  # [B]
