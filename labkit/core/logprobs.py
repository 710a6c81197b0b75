"""Token log-probabilities, masked reductions and entropy: the plumbing under every loss.

Computed in float32 at least (fp16/bf16 lifted), float64 kept; masks select (padding may hold
-inf or NaN and never reaches a sum), see ``labkit.core.numerics``.
"""

from __future__ import annotations

import torch

from labkit.core.numerics import float_dtype, where_valid


def token_logprobs(
    logits: torch.Tensor, ids: torch.Tensor, temperature: float = 1.0
) -> torch.Tensor:
    """log pi(y_t | y_<t) of the given tokens.

    logits: [B, T, V] (already aligned so logits[:, t] predicts ids[:, t]); ids: [B, T] -> [B, T].
    Uses log_softmax in float32 (float64 kept), which cannot overflow. ``temperature`` divides the logits the way
    sampling did, so training log-probs match the sampling distribution.

    >>> logits = torch.zeros(1, 2, 4)  # uniform over 4 tokens
    >>> token_logprobs(logits, torch.tensor([[0, 3]])).exp()
    tensor([[0.2500, 0.2500]])
    """
    return SelectiveLogSoftmax.apply(logits, ids, temperature)  # [B, T]


CHUNK_ELEMENTS = 2**22
"""Logits per fp32 chunk in :class:`SelectiveLogSoftmax` (16 MB; ~27 rows of a 150k vocab)."""


class SelectiveLogSoftmax(torch.autograd.Function):
    """log softmax(z / tau)[y] = z_y / tau - logsumexp(z / tau) row chunk by row chunk, in fp32.

    Forward and backward keep one [rows, V] fp32 chunk at a time and save only the logits (in
    their own dtype) and the [B, T] logsumexp: no B x T x V fp32 tensor, whatever the vocabulary.
    d/dz_v = (1[v = y] - p_v) / tau. TRL's ``selective_log_softmax`` loops the same way in its
    forward; here the backward is chunked too.
    """

    @staticmethod
    def forward(ctx, logits, ids, temperature):
        dtype, V = float_dtype(logits), logits.shape[-1]
        flat, idx = logits.reshape(-1, V), ids.reshape(-1, 1)  # [N, V], [N, 1]
        n = max(1, CHUNK_ELEMENTS // V)
        lse = torch.cat([(z.to(dtype) / temperature).logsumexp(-1) for z in flat.split(n)])  # [N]
        out = flat.gather(-1, idx).squeeze(-1).to(dtype) / temperature - lse  # [N]
        ctx.save_for_backward(logits, ids, lse)
        ctx.temperature, ctx.n = temperature, n
        return out.view(ids.shape)  # [B, T]

    @staticmethod
    def backward(ctx, g):
        logits, ids, lse = ctx.saved_tensors
        V, n, tau = logits.shape[-1], ctx.n, ctx.temperature
        flat, idx = logits.reshape(-1, V), ids.reshape(-1, 1)  # [N, V], [N, 1]
        g = g.reshape(-1, 1) / tau  # [N, 1]
        grad = torch.empty_like(logits)  # [B, T, V], filled chunk by chunk through a view
        out = grad.view(-1, V)  # [N, V]
        for k in range(0, flat.shape[0], n):
            z, gc = flat[k : k + n].to(lse.dtype), g[k : k + n]  # [n, V], [n, 1]
            p = (z / tau - lse[k : k + n, None]).exp_()  # [n, V] softmax
            out[k : k + n] = p.mul_(-gc).scatter_add_(-1, idx[k : k + n], gc)
        del out  # the base alone is returned: autograd can take it as .grad without a copy
        return grad, None, None


def masked_sum(x: torch.Tensor, mask: torch.Tensor, dim=None) -> torch.Tensor:
    """Sum of x where mask is 1; whatever x holds elsewhere (NaN, inf) is ignored.

    >>> masked_sum(torch.tensor([1., 2., float("nan")]), torch.tensor([1, 1, 0]))
    tensor(3.)
    """
    x = where_valid(x.to(float_dtype(x, mask)), mask)
    return x.sum() if dim is None else x.sum(dim)


def masked_mean(x: torch.Tensor, mask: torch.Tensor, dim=None) -> torch.Tensor:
    """Mean of x where mask is 1; 0 (not NaN) where the mask is empty.

    >>> masked_mean(torch.tensor([1., 2., 3.]), torch.tensor([1, 0, 1]))
    tensor(2.)
    >>> masked_mean(torch.tensor([1., 2.]), torch.tensor([0, 0]))
    tensor(0.)
    """
    mask = mask.to(float_dtype(x))
    return masked_sum(x, mask, dim) / mask.sum(dim).clamp(min=1.0)


def entropy_from_logits(logits: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """H(pi(. | y_<t)) = -sum_v p_v log p_v per position: [B, T, V] -> [B, T].

    Computed over chunks of positions (as TRL's ``entropy_from_logits``), so its float32
    temporaries stay at ``ENTROPY_CHUNK`` entries however large B x T x V is (the one-pass
    version ran lab 51's GPU preset out of memory on an H200: docs/gpu_check/). Vocab entries with logit -inf (top-k / top-p masking) add 0 log 0 = 0, not NaN.

    >>> entropy_from_logits(torch.zeros(1, 1, 4))  # uniform: log 4
    tensor([[1.3863]])
    >>> entropy_from_logits(torch.tensor([[[0.0, 0.0, -float("inf")]]]))  # log 2
    tensor([[0.6931]])
    """
    V, dtype = logits.shape[-1], float_dtype(logits)
    flat = logits.reshape(-1, V)  # [N, V]
    n = max(1, ENTROPY_CHUNK // V)  # positions per chunk: fp32 temporaries of chunk x V only
    return torch.cat([_entropy(z.to(dtype) / temperature) for z in flat.split(n)]).view(
        logits.shape[:-1]
    )  # [B, T]


ENTROPY_CHUNK = 2**24  # vocab entries per chunk of entropy_from_logits (64 MB in fp32)


def _entropy(z: torch.Tensor) -> torch.Tensor:
    """[n, V] logits -> [n] entropies."""
    logp = z.log_softmax(-1)  # [n, V]
    p = logp.exp()  # [n, V]
    # select before multiplying: 0 * -inf is NaN, and so would be its gradient
    return -(p * torch.where(p > 0, logp, 0.0)).sum(-1)  # [n]


def entropy_bonus(
    logits: torch.Tensor,
    mask: torch.Tensor,
    entropy_coef: float,
    temperature: float = 1.0,
    entropy: torch.Tensor | None = None,
) -> torch.Tensor:
    """The entropy term added to a policy loss: -c_H * H_bar, H_bar the masked mean entropy,

        L = L_policy (+ c_vf L_value) - c_H * sum_t m_t H(pi(. | y_<t)) / sum_t m_t,

    so minimising L raises the entropy of the current policy (the "entropy regulariser" of
    PPO's total loss: Schulman et al. 2017, 1707.06347, eq. 9; seed 002: "total loss = policy +
    value + entropy"). Its gradient in the logits z of a position is
    -c_H * m_t / sum(m) * dH/dz_v, with dH/dz_v = -p_v (log p_v + H). logits [B, T, V],
    mask [B, T] -> a scalar with gradient. ``entropy``: H [B, T] already computed from these
    logits (with its gradient), reused instead of computing it again.

    >>> z = torch.zeros(1, 2, 4, requires_grad=True)  # uniform: H = log 4 at each position
    >>> entropy_bonus(z, torch.tensor([[1, 0]]), 0.1)
    tensor(-0.1386, grad_fn=<MulBackward0>)
    """
    H = entropy_from_logits(logits, temperature) if entropy is None else entropy  # [B, T]
    return -entropy_coef * masked_mean(H, mask)
