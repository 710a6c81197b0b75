"""Token log-probabilities, masked reductions and entropy: the plumbing under every loss."""

from __future__ import annotations

import torch


def token_logprobs(logits: torch.Tensor, ids: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """log pi(y_t | y_<t) of the given tokens.

    logits: [B, T, V] (already aligned so logits[:, t] predicts ids[:, t]); ids: [B, T] -> [B, T].
    Uses log_softmax in float32, which cannot overflow. ``temperature`` divides the logits the way
    sampling did, so training log-probs match the sampling distribution.

    >>> logits = torch.zeros(1, 2, 4)  # uniform over 4 tokens
    >>> token_logprobs(logits, torch.tensor([[0, 3]])).exp()
    tensor([[0.2500, 0.2500]])
    """
    logits = logits.float() / temperature  # [B, T, V]
    return torch.gather(logits.log_softmax(-1), -1, ids.unsqueeze(-1)).squeeze(-1)  # [B, T]


def masked_sum(x: torch.Tensor, mask: torch.Tensor, dim=None) -> torch.Tensor:
    """Sum of x where mask is 1.

    >>> masked_sum(torch.tensor([1., 2., 3.]), torch.tensor([1, 0, 1]))
    tensor(4.)
    """
    return (x * mask).sum() if dim is None else (x * mask).sum(dim)


def masked_mean(x: torch.Tensor, mask: torch.Tensor, dim=None) -> torch.Tensor:
    """Mean of x where mask is 1; 0 (not NaN) where the mask is empty.

    >>> masked_mean(torch.tensor([1., 2., 3.]), torch.tensor([1, 0, 1]))
    tensor(2.)
    >>> masked_mean(torch.tensor([1., 2.]), torch.tensor([0, 0]))
    tensor(0.)
    """
    mask = mask.to(x.dtype)
    return masked_sum(x, mask, dim) / mask.sum(dim).clamp(min=1.0)


def entropy_from_logits(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """H(pi(. | y_<t)) = -sum_v p_v log p_v per position: [B, T, V] -> [B, T].

    >>> entropy_from_logits(torch.zeros(1, 1, 4))  # uniform: log 4
    tensor([[1.3863]])
    """
    logp = (logits.float() / temperature).log_softmax(-1)  # [B, T, V]
    return -(logp.exp() * logp).sum(-1)  # [B, T]
