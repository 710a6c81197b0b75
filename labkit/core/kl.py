"""KL(pi_theta || pi_ref) estimators from sampled tokens: k1, k2, k3 and their variants.

Inputs are the log-probs of the *sampled* tokens, elementwise, any shape (usually [B, T]):
``logp`` = log pi_theta(y_t), ``ref_logp`` = log pi_ref(y_t). With r = pi_ref / pi_theta:

    k1 = -log r                 unbiased, high variance; its gradient has mean 0 (useless as a loss)
    k2 = (log r)^2 / 2          biased, but E[grad k2] = grad KL exactly (a good loss)
    k3 = (r - 1) - log r >= 0   unbiased, low variance; as a loss its mean gradient is the
                                gradient of the *forward* KL(pi_ref || pi_theta) (GRPO uses it)

Source: J. Schulman, "Approximating KL Divergence" (2020); the seed slides' appendix B.

Numerical guards (departures, documented):
- r = exp(log r) overflows float32 for log r > ~88. ``exp`` only ever sees
  ``min(log r, LOG_RATIO_MAX)`` with LOG_RATIO_MAX = 20 (e^20 ~ 4.9e8; verl's ``low_var_kl``
  clips log r to [-20, 20] too); the ``- log r`` term is never clamped, so k3 keeps its exact
  value and gradient for log r <= 20 and stays finite beyond. Real tokens almost never reach
  |log r| = 20; TRL applies no clamp, so results agree with it wherever the clamp does not bind.
- ``clamp=c`` (off by default) bounds k3 itself, as verl's ``low_var_kl`` does with c = 10.
- fp16/bf16 inputs are computed in float32 (e^20 overflows fp16), float64 stays float64.
"""

from __future__ import annotations

import torch

from labkit.core.numerics import float_dtype
from labkit.core.options import KL_ESTIMATORS, choose

LOG_RATIO_MAX = 20.0  # exp() never sees a log-ratio above this: e^20 ~ 4.85e8, finite in fp32/bf16


def safe_exp(log_x: torch.Tensor) -> torch.Tensor:
    """exp(min(log_x, LOG_RATIO_MAX)): a ratio that cannot overflow (gradient 0 past the bound).

    >>> safe_exp(torch.tensor([0.0, 100.0, -100.0]))
    tensor([1.0000e+00, 4.8517e+08, 3.7835e-44])
    """
    return log_x.clamp(max=LOG_RATIO_MAX).exp()


def _log_ratio(log_num: torch.Tensor, log_den: torch.Tensor) -> torch.Tensor:
    """log_num - log_den in float32 at least (fp16 cannot hold e^20)."""
    dtype = float_dtype(log_num, log_den)
    return log_num.to(dtype) - log_den.to(dtype)


def kl_k1(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """k1 = -log r = log pi_theta - log pi_ref (per token, unbiased, can be negative).

    >>> kl_k1(torch.tensor([-1.0]), torch.tensor([-2.0]))
    tensor([1.])
    """
    return _log_ratio(logp, ref_logp)


def kl_k2(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """k2 = (log r)^2 / 2 (per token, >= 0, biased: E[k2] = KL + O(KL^2)).

    >>> kl_k2(torch.tensor([-1.0]), torch.tensor([-2.0]))
    tensor([0.5000])
    """
    return 0.5 * _log_ratio(logp, ref_logp) ** 2


def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor, clamp: float | None = None) -> torch.Tensor:
    """k3 = (r - 1) - log r with r = pi_ref / pi_theta (per token, >= 0, unbiased).

    k1 plus the control variate r - 1 (E_pi[r - 1] = 0). This is GRPO's per-token KL
    (DeepSeekMath eq. 4; TRL ``per_token_kl``). exp sees log r clamped at LOG_RATIO_MAX.
    ``clamp=c`` clips k3 to [-c, c] (only the top binds, k3 >= 0): verl's ``low_var_kl``
    (``verl/trainer/ppo/core_algos.py``, ``kl_penalty``) uses c = 10, and with c = 10 this equals
    it for every log r < 4.8e8. A departure from k3's unbiasedness, and no gradient past c;
    None (default) is TRL's unclamped k3.

    >>> kl_k3(torch.tensor([-1.0, -1.0]), torch.tensor([-2.0, -1.0]))  # e^-1 - 1 + 1, 0
    tensor([0.3679, 0.0000])
    >>> kl_k3(torch.tensor([-100.0, 0.0]), torch.tensor([0.0, -100.0])).isfinite().all()
    tensor(True)
    >>> kl_k3(torch.tensor([-30.0]), torch.tensor([0.0]), clamp=10.0)  # e^20 - 1 - 30 -> 10
    tensor([10.])
    """
    log_r = _log_ratio(ref_logp, logp)
    k3 = safe_exp(log_r) - 1 - log_r
    return k3 if clamp is None else k3.clamp(-clamp, clamp)  # clamp: verl's low_var_kl


def kl_k3_st(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Straight-through k3: the value of k3, the gradient of k2 (= the exact KL gradient in mean).

    value = k3; d/dtheta = d k2 / d theta = (log pi_theta - log pi_ref) grad log pi_theta.

    >>> x = torch.tensor([-1.0], requires_grad=True)
    >>> y = kl_k3_st(x, torch.tensor([-2.0])); y.backward(); y.detach(), x.grad  # grad of k2 = 1
    (tensor([0.3679]), tensor([1.]))
    """
    k2 = kl_k2(logp, ref_logp)
    return k2 + (kl_k3(logp, ref_logp) - k2).detach()


def kl_k3_is(
    logp: torch.Tensor,
    ref_logp: torch.Tensor,
    old_logp: torch.Tensor | None = None,
    *,
    ratio: torch.Tensor | None = None,
    clamp: float | None = None,
) -> torch.Tensor:
    """Importance-corrected k3 for tokens sampled from pi_old: rho * k3, rho = pi_theta / pi_old.

    E_{pi_old}[rho k3] = KL(pi_theta || pi_ref), and its gradient (rho is *not* detached) is the
    unbiased gradient of that reverse KL, on- and off-policy.
    Source: DeepSeek-V3.2 (2512.02556) "unbiased KL estimate"; TRL ``use_bias_correction_kl``.
    rho = exp(logp - old_logp) per token from ``old_logp``, or pass ``ratio`` itself (e.g.
    GSPO's sequence ratio [B, 1]; ``policy_loss`` does). The one importance-weighted k3 of
    labkit: ``kl_penalty`` and ``experiments.kl_table`` call it. ``clamp``: see :func:`kl_k3`.

    >>> kl_k3_is(torch.tensor([-1.0]), torch.tensor([-2.0]), torch.tensor([-1.0]))  # ratio 1
    tensor([0.3679])
    """
    if (old_logp is None) == (ratio is None):
        raise ValueError(
            "kl_k3_is needs exactly one of old_logp (rho = pi_theta / pi_old per "
            "token) or ratio=rho (e.g. GSPO's sequence ratio)."
        )
    rho = safe_exp(_log_ratio(logp, old_logp)) if ratio is None else ratio
    return rho * kl_k3(logp, ref_logp, clamp)


def kl_exact(logits: torch.Tensor, ref_logits: torch.Tensor) -> torch.Tensor:
    """Exact KL(pi || pi_ref) = sum_v pi_v (log pi_v - log pi_ref,v) per position.

    logits, ref_logits: [..., V] -> [...] (e.g. [B, T, V] -> [B, T]). The ground truth the
    sampled-token estimators above approximate. Vocab entries with pi_v = 0 (logit -inf, as
    top-k / top-p leave them) add 0 (0 log 0 = 0), not NaN; pi_v > 0 where pi_ref,v = 0 gives
    +inf, the true value.

    >>> kl_exact(torch.tensor([0.0, 0.0]), torch.tensor([0.0, 0.0]))
    tensor(0.)
    >>> kl_exact(torch.log(torch.tensor([0.5, 0.5])), torch.log(torch.tensor([0.9, 0.1])))
    tensor(0.5108)
    >>> kl_exact(torch.tensor([0.0, -float("inf")]), torch.tensor([0.0, -float("inf")]))
    tensor(0.)
    """
    dtype = float_dtype(logits, ref_logits)  # fp16/bf16 -> fp32, keeps fp64
    logq = logits.to(dtype).log_softmax(-1)  # [..., V]
    logp_ref = ref_logits.to(dtype).log_softmax(-1)  # [..., V]
    q = logq.exp()  # [..., V]
    # select before multiplying: 0 * (-inf - -inf) is NaN, and so would be its gradient
    return (q * torch.where(q > 0, logq - logp_ref, 0.0)).sum(-1)


ESTIMATORS = {"k1": kl_k1, "k2": kl_k2, "k3": kl_k3, "k3_st": kl_k3_st}


def kl_estimate(
    logp: torch.Tensor, ref_logp: torch.Tensor, estimator: str = "k3", clamp: float | None = None
) -> torch.Tensor:
    """Dispatch on ``estimator`` in {"k1", "k2", "k3", "k3_st"}; unknown names raise ValueError.

    ``clamp`` bounds k3 (verl's ``low_var_kl``, see :func:`kl_k3`); other estimators refuse it.

    >>> kl_estimate(torch.tensor([-1.0]), torch.tensor([-2.0]), "k2")
    tensor([0.5000])
    """
    fn = ESTIMATORS[choose("kl_estimator", estimator, KL_ESTIMATORS)]
    if clamp is None:
        return fn(logp, ref_logp)
    if estimator != "k3":
        raise ValueError(
            f"clamp={clamp} bounds k3 only (verl's low_var_kl); use "
            f"kl_estimator='k3' or clamp=None (got {estimator!r})."
        )
    return kl_k3(logp, ref_logp, clamp)
