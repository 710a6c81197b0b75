"""DAPO's data-side tricks (Yu et al. 2025, 2503.14476): soft overlong punishment and the
group filter of dynamic sampling. Clip-higher and the token-level loss live in
``labkit.core.policy_loss`` (``epsilon_high``, ``loss_type="dapo"``); overlong filtering is
``mask_truncated_completions`` in the trainer.
"""

from __future__ import annotations

import torch

from labkit.models.rollout import concat_batches


def soft_overlong_penalty(lengths: torch.Tensor, max_len: int, buffer: int,
                          penalty: float = 1.0) -> torch.Tensor:
    """DAPO eq. 13: R_length(y) = 0 if |y| <= L_max - L_cache,
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
    advantage and gives no gradient (DAPO eq. 11's constraint 0 < |{correct}| < G).

    >>> informative_groups(torch.tensor([1., 1., 0., 1., 0., 0.]), 2)
    tensor([False, False,  True,  True, False, False])
    """
    groups = rewards.view(-1, num_generations)  # [B/G, G]
    spread = groups.max(1).values > groups.min(1).values  # [B/G]
    return spread.repeat_interleave(num_generations)  # [B]


def dynamic_sample(trainer):
    """DAPO's dynamic sampling: keep the groups whose rewards differ, sampling again (up to
    ``max_sampling_rounds``) until ``prompts_per_step`` groups are kept.

    Returns (batch, examples, rewards [B], per_fn, info) like ``trainer.collect``; info has
    ``sampling/rounds`` and ``sampling/kept_frac`` (kept groups / sampled groups). Departure from
    DAPO (which samples without limit): after the last round it trains on the groups kept (on the
    last batch, all zero-advantage, if none was kept).
    """
    c, G = trainer.config, trainer.config.num_generations
    parts, rounds, seen, kept = [], 0, 0, 0
    while kept < c.prompts_per_step and rounds < c.max_sampling_rounds:
        batch, examples = trainer.generate()
        rewards, per_fn = trainer.score(batch, examples)
        rounds, seen = rounds + 1, seen + len(examples) // G
        keep = informative_groups(rewards, G).nonzero().squeeze(-1)  # [n]
        if len(keep):
            rows = keep.tolist()
            parts.append((batch.select(keep), [examples[i] for i in rows], rewards[keep],
                          {k: [v[i] for i in rows] for k, v in per_fn.items()}))
            kept += len(rows) // G
    info = {"sampling/rounds": rounds, "sampling/kept_frac": kept / seen}
    if not parts:
        return batch, examples, rewards, per_fn, info
    n = min(kept, c.prompts_per_step) * G
    batch = concat_batches([p[0] for p in parts], trainer.tokenizer.pad_token_id)
    return (batch.select(torch.arange(n)), [e for p in parts for e in p[1]][:n],
            torch.cat([p[2] for p in parts])[:n],
            {k: [v for p in parts for v in p[3][k]][:n] for k in per_fn}, info)
