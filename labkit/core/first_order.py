"""The token-level surrogate as the first-order approximation of the sequence-level one.

The reward is a sequence's, so the importance-sampled objective is the sequence's (seed 002,
"Token-level 目标是 J^seq 的一阶近似", after Zheng et al. 2025, "Stabilizing Reinforcement
Learning with LLMs: Formulation and Practices", arXiv 2512.01374, secs. 2.3-2.4; GSPO, arXiv
2507.18071, sec. 3, on why the token-level weight is the ill-posed one). With mu_old the policy
that *sampled* the batch:

    J^seq(theta)   = 1/B sum_i A_i prod_t rho_{i,t},     rho_{i,t} = pi_theta(y_t) / mu_old(y_t)
    J^token(theta) = 1/B sum_i A_i sum_t rho_{i,t}       (REINFORCE's token sum)

The seed's expansion: rho_{i,t} = 1 + delta_t, prod_t (1 + delta_t) = 1 + sum_t delta_t + O(delta^2),
so J^seq = J^token - 1/B sum_i A_i (T_i - 1) + O(delta^2), the middle term constant in theta, and

    grad J^seq - grad J^token = 1/B sum_i A_i sum_t grad rho_{i,t} (prod_{s != t} rho_{i,s} - 1)
                              = O(delta):

equal where pi_theta = mu_old, apart by a first-order term as the policy drifts from the
sampler (the seed's two causes: staleness, pi_theta != pi_theta_old after updates; and a
training-inference discrepancy, a sampler that computes mu_old != pi_theta_old).
Departure: GRPO's per-sequence mean (1/|y_i| sum_t) weights the same token terms by 1/|y_i|;
the seed's argument, and these functions, use the plain sum, the one whose gradient equals
J^seq's at pi_theta = mu_old.

:func:`token_surrogate` and :func:`sequence_surrogate` return (loss = -J, stats) from the same
per-token log-ratios; :func:`gradient_agreement` compares two gradients. Shapes: B sequences,
T tokens, ``mask`` [B, T]; the advantage A_i is [B].
"""

from __future__ import annotations

import torch

from labkit.core.kl import safe_exp
from labkit.core.numerics import float_dtype, where_valid
from labkit.core.surrogate import importance_ratio


def token_surrogate(
    logp: torch.Tensor, old_logp: torch.Tensor, adv: torch.Tensor, mask: torch.Tensor
) -> tuple[torch.Tensor, dict]:
    """loss = -J^token = -1/B sum_i A_i sum_t rho_{i,t} (unclipped, each token's ratio alone;
    rho from ``labkit.core.surrogate.importance_ratio``). stats: ``kl/old``, the k3 mean over
    valid tokens of KL(mu_old || pi_theta), the drift.

    >>> lp = torch.log(torch.tensor([[0.5, 0.5]]))
    >>> token_surrogate(lp, lp, torch.tensor([1.0]), torch.ones(1, 2))[0]   # rho = 1: -A sum 1
    tensor(-2.)
    """
    rho, info = importance_ratio(logp, old_logp, mask, "token")  # [B, T]
    J = (where_valid(rho, mask).sum(-1) * adv).mean()  # []
    return -J, {"kl/old": info["kl/old"]}


def sequence_ratio(logp: torch.Tensor, old_logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """prod_t rho_{i,t} = pi_theta(y_i) / mu_old(y_i) over the valid tokens [B] (1 for a sequence
    with none): exp of the summed log-ratios, in fp32 at least, clamped at e^20
    (``labkit.core.kl.safe_exp``; gradient 0 past it). Not GSPO's length-normalised
    exp(mean_t log rho_t) (``importance_ratio(level="sequence")``).

    >>> sequence_ratio(torch.log(torch.tensor([[0.5, 0.5]])), torch.log(torch.tensor([[0.25, 0.5]])),
    ...                torch.ones(1, 2))
    tensor([2.])
    """
    dtype = float_dtype(logp, old_logp)  # bf16 log-probs summed in fp32 at least
    log_rho = where_valid(logp.to(dtype) - old_logp.to(dtype), mask)  # [B, T]
    return safe_exp(log_rho.sum(-1))  # [B]


def sequence_surrogate(
    logp: torch.Tensor, old_logp: torch.Tensor, adv: torch.Tensor, mask: torch.Tensor
) -> tuple[torch.Tensor, dict]:
    """loss = -J^seq = -1/B sum_i A_i prod_t rho_{i,t}, the sequence's own importance weight
    (:func:`sequence_ratio`). stats: ``ratio/seq_max``, ``ratio/seq_min`` over sequences with a
    valid token.

    >>> lp = torch.log(torch.tensor([[0.5, 0.5]]))
    >>> old = torch.log(torch.tensor([[0.25, 0.5]]))            # rho = (2, 1): product 2
    >>> sequence_surrogate(lp, old, torch.tensor([1.0]), torch.ones(1, 2))[0]
    tensor(-2.)
    """
    w = sequence_ratio(logp, old_logp, mask)  # [B]
    valid = (mask != 0).any(-1)  # [B]
    inf = torch.full_like(w, float("inf"))  # [B]
    stats = {
        "ratio/seq_max": torch.where(valid, w, -inf).amax().detach(),
        "ratio/seq_min": torch.where(valid, w, inf).amin().detach(),
    }
    return -(w * adv.to(w.dtype)).mean(), stats


def gradient_agreement(g: torch.Tensor, g_ref: torch.Tensor) -> dict:
    """How far gradient ``g`` [N] is from ``g_ref`` [N]: ``cos`` (their cosine), ``rel_err`` =
    |g - g_ref| / |g_ref| (the approximation's relative error), ``norm_ratio`` = |g| / |g_ref|.
    Undefined values are NaN, not a number that would pass for a measurement: all three when
    g_ref = 0 (a batch whose advantages are all 0 gives g = g_ref = 0), the cosine when g = 0.
    Computed in float64: an fp32 dot product over the tiny policy's ~1e6 parameters is off by
    ~1e-4 (a cosine of 1.0001 at g = g_ref).

    >>> st = gradient_agreement(torch.tensor([1.0, 0.0]), torch.tensor([1.0, 1.0]))
    >>> [round(float(st[k]), 4) for k in ("cos", "rel_err", "norm_ratio")]
    [0.7071, 0.7071, 0.7071]
    >>> gradient_agreement(torch.zeros(2), torch.zeros(2))["rel_err"]
    tensor(nan, dtype=torch.float64)
    """
    g, g_ref = g.double(), g_ref.double()  # [N], [N]
    n, n_ref = g.norm(), g_ref.norm()
    nan = torch.full_like(n, float("nan"))
    return {
        "cos": torch.where(n * n_ref > 0, (g @ g_ref) / (n * n_ref), nan),
        "rel_err": torch.where(n_ref > 0, (g - g_ref).norm() / n_ref, nan),
        "norm_ratio": torch.where(n_ref > 0, n / n_ref, nan),
    }
