"""KL(pi_theta || pi_ref) estimators from sampled tokens: k1, k2, k3 and their variants.

Inputs are the log-probs of the *sampled* tokens, elementwise, any shape (usually [B, T]):
``logp`` = log pi_theta(y_t), ``ref_logp`` = log pi_ref(y_t). With r = pi_ref / pi_theta:

    k1 = -log r                 unbiased, high variance; its gradient has mean 0 (useless as a loss)
    k2 = (log r)^2 / 2          biased, but E[grad k2] = grad KL exactly (a good loss)
    k3 = (r - 1) - log r >= 0   unbiased, low variance; as a loss its mean gradient is the
                                gradient of the *forward* KL(pi_ref || pi_theta) (GRPO uses it)

Source: J. Schulman, "Approximating KL Divergence" (2020); the seed slides' appendix B.

Numerical guard (a departure, documented): r = exp(log r) overflows float32 for log r > ~88.
``exp`` only ever sees ``min(log r, LOG_RATIO_MAX)`` with LOG_RATIO_MAX = 20 (e^20 ~ 4.9e8, as
verl's ``low_var_kl`` clamps); the ``- log r`` term is never clamped, so k3 keeps its exact value and
gradient for log r <= 20 and stays finite (no inf, no NaN) beyond. Real tokens almost never reach
|log r| = 20; TRL applies no clamp, so results agree with it wherever the clamp does not bind.
"""

from __future__ import annotations

import torch

from labkit.core.options import KL_ESTIMATORS, choose

LOG_RATIO_MAX = 20.0  # exp() never sees a log-ratio above this: e^20 ~ 4.85e8, finite in fp32/bf16


def safe_exp(log_x: torch.Tensor) -> torch.Tensor:
    """exp(min(log_x, LOG_RATIO_MAX)): a ratio that cannot overflow (gradient 0 past the bound).

    >>> safe_exp(torch.tensor([0.0, 100.0, -100.0]))
    tensor([1.0000e+00, 4.8517e+08, 3.7835e-44])
    """
    return log_x.clamp(max=LOG_RATIO_MAX).exp()


def kl_k1(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """k1 = -log r = log pi_theta - log pi_ref (per token, unbiased, can be negative).

    >>> kl_k1(torch.tensor([-1.0]), torch.tensor([-2.0]))
    tensor([1.])
    """
    return logp - ref_logp


def kl_k2(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """k2 = (log r)^2 / 2 (per token, >= 0, biased: E[k2] = KL + O(KL^2)).

    >>> kl_k2(torch.tensor([-1.0]), torch.tensor([-2.0]))
    tensor([0.5000])
    """
    return 0.5 * (logp - ref_logp) ** 2


def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """k3 = (r - 1) - log r with r = pi_ref / pi_theta (per token, >= 0, unbiased).

    k1 plus the control variate r - 1 (E_pi[r - 1] = 0). This is GRPO's per-token KL
    (DeepSeekMath eq. 4; TRL ``per_token_kl``). exp sees log r clamped at LOG_RATIO_MAX.

    >>> kl_k3(torch.tensor([-1.0, -1.0]), torch.tensor([-2.0, -1.0]))  # e^-1 - 1 + 1, 0
    tensor([0.3679, 0.0000])
    >>> kl_k3(torch.tensor([-100.0, 0.0]), torch.tensor([0.0, -100.0])).isfinite().all()
    tensor(True)
    """
    log_r = ref_logp - logp
    return safe_exp(log_r) - 1 - log_r


def kl_k3_st(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """Straight-through k3: the value of k3, the gradient of k2 (= the exact KL gradient in mean).

    value = k3; d/dtheta = d k2 / d theta = (log pi_theta - log pi_ref) grad log pi_theta.

    >>> x = torch.tensor([-1.0], requires_grad=True)
    >>> y = kl_k3_st(x, torch.tensor([-2.0])); y.backward(); y.detach(), x.grad  # grad of k2 = 1
    (tensor([0.3679]), tensor([1.]))
    """
    k2 = kl_k2(logp, ref_logp)
    return k2 + (kl_k3(logp, ref_logp) - k2).detach()


def kl_k3_is(logp: torch.Tensor, ref_logp: torch.Tensor, old_logp: torch.Tensor) -> torch.Tensor:
    """Importance-corrected k3 for tokens sampled from pi_old: (pi_theta / pi_old) * k3.

    E_{pi_old}[ratio * k3] = KL(pi_theta || pi_ref), and its gradient (the ratio is *not*
    detached) is the unbiased gradient of that reverse KL, on- and off-policy.
    Source: DeepSeek-V3.2 (2512.02556) "unbiased KL estimate"; TRL ``use_bias_correction_kl``.

    >>> kl_k3_is(torch.tensor([-1.0]), torch.tensor([-2.0]), torch.tensor([-1.0]))  # ratio 1
    tensor([0.3679])
    """
    return safe_exp(logp - old_logp) * kl_k3(logp, ref_logp)


def kl_exact(logits: torch.Tensor, ref_logits: torch.Tensor) -> torch.Tensor:
    """Exact KL(pi || pi_ref) = sum_v pi_v (log pi_v - log pi_ref,v) per position.

    logits, ref_logits: [..., V] -> [...] (e.g. [B, T, V] -> [B, T]). The ground truth the
    sampled-token estimators above approximate.

    >>> kl_exact(torch.tensor([0.0, 0.0]), torch.tensor([0.0, 0.0]))
    tensor(0.)
    >>> kl_exact(torch.log(torch.tensor([0.5, 0.5])), torch.log(torch.tensor([0.9, 0.1])))
    tensor(0.5108)
    """
    dtype = torch.promote_types(logits.dtype, torch.float32)  # fp16/bf16 -> fp32, keeps fp64
    logq = logits.to(dtype).log_softmax(-1)  # [..., V]
    logp_ref = ref_logits.to(dtype).log_softmax(-1)  # [..., V]
    return (logq.exp() * (logq - logp_ref)).sum(-1)


ESTIMATORS = {"k1": kl_k1, "k2": kl_k2, "k3": kl_k3, "k3_st": kl_k3_st}


def kl_estimate(logp: torch.Tensor, ref_logp: torch.Tensor, estimator: str = "k3") -> torch.Tensor:
    """Dispatch on ``estimator`` in {"k1", "k2", "k3", "k3_st"}; unknown names raise ValueError.

    >>> kl_estimate(torch.tensor([-1.0]), torch.tensor([-2.0]), "k2")
    tensor([0.5000])
    """
    return ESTIMATORS[choose("kl_estimator", estimator, KL_ESTIMATORS)](logp, ref_logp)
