"""KL-estimator experiments: Schulman's table by Monte Carlo (next to its closed forms and the
published numbers), and a bandit that shows KL in the reward vs KL as a loss.

Setting (Schulman, "Approximating KL Divergence", 2020): samples x ~ q = N(0, 1), p = N(mu, 1),
r = p(x) / q(x), true KL(q || p) = mu^2 / 2. Here q plays pi_theta and p plays pi_ref, so the
estimators are labkit's own ``kl_k1/kl_k2/kl_k3`` applied to log q(x) and log p(x).

Closed forms (REFERENCES.md): log r = mu x - mu^2/2, so
- k1: bias 0, std/KL = 2 / mu;
- k2: bias/KL = mu^2 / 4, std/KL = sqrt(2 + mu^2);
- k3: bias 0, std/KL = 2 sqrt(e^{mu^2} - 1 - mu^2) / mu^2.
Kept out of ``labkit.core`` because it returns a pandas DataFrame (core is pure torch).
"""

from __future__ import annotations

import math

import pandas as pd
import torch

from labkit.core.kl import kl_k1, kl_k2, kl_k3, kl_k3_is, kl_k3_st

ESTIMATORS = {"k1": kl_k1, "k2": kl_k2, "k3": kl_k3}
# Schulman's published table: (mu, estimator) -> (bias/KL, std/KL)
PUBLISHED = {
    (0.1, "k1"): (0.0, 20.0),
    (0.1, "k2"): (0.002, 1.42),
    (0.1, "k3"): (0.0, 1.42),
    (1.0, "k1"): (0.0, 2.0),
    (1.0, "k2"): (0.25, 1.73),
    (1.0, "k3"): (0.0, 1.70),
}


def closed_form(mu: float, estimator: str) -> tuple[float, float]:
    """(bias/KL, std/KL) of an estimator for q = N(0, 1), p = N(mu, 1).

    >>> closed_form(1.0, "k2")
    (0.25, 1.7320508075688772)
    >>> round(closed_form(0.1, "k3")[1], 4)
    1.4166
    """
    m2 = mu * mu
    if estimator == "k1":
        return 0.0, 2.0 / mu
    if estimator == "k2":
        return m2 / 4.0, math.sqrt(2.0 + m2)
    if estimator == "k3":
        return 0.0, 2.0 * math.sqrt(math.expm1(m2) - m2) / m2
    raise ValueError(f"estimator={estimator!r} is not one of {tuple(ESTIMATORS)}.")


def _moments(k: torch.Tensor, kl: float) -> dict[str, float]:
    """MC bias/KL and std/KL with their standard errors (delta method for the std)."""
    n = k.numel()
    mean, s = k.mean(), k.std()
    m4 = ((k - mean) ** 4).mean()
    se_std = torch.sqrt((m4 - s**4).clamp(min=0) / (4 * n * s**2))
    return {
        "bias/KL": float((mean - kl) / kl),
        "bias/KL se": float(s / math.sqrt(n) / kl),
        "std/KL": float(s / kl),
        "std/KL se": float(se_std / kl),
    }


def schulman_table(mus=(0.1, 1.0), n: int = 1_000_000, seed: int = 0) -> pd.DataFrame:
    """One row per (mu, estimator): Monte-Carlo bias/KL and std/KL (with standard errors), the
    closed forms, and Schulman's published numbers (NaN where he gave none).

    >>> df = schulman_table(mus=(1.0,), n=100_000, seed=0)
    >>> list(df.estimator), bool(abs(df["std/KL"][2] - 1.695) < 0.05)
    (['k1', 'k2', 'k3'], True)
    """
    g = torch.Generator().manual_seed(seed)
    rows = []
    for mu in mus:
        x = torch.randn(n, generator=g, dtype=torch.float64)  # [N] samples from q
        log_q = -0.5 * x**2  # [N]; the shared -log sqrt(2 pi) cancels in every estimator
        log_p = -0.5 * (x - mu) ** 2  # [N]
        kl = mu * mu / 2
        for name, fn in ESTIMATORS.items():
            bias, std = closed_form(mu, name)
            pub = PUBLISHED.get((round(mu, 6), name), (math.nan, math.nan))
            rows.append(
                {
                    "mu": mu,
                    "estimator": name,
                    "KL": kl,
                    **_moments(fn(log_q, log_p), kl),
                    "bias/KL closed": bias,
                    "std/KL closed": std,
                    "bias/KL published": pub[0],
                    "std/KL published": pub[1],
                }
            )
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- KL in the reward vs KL as a loss

KL_USES = (
    "k1 in reward",
    "k1 as loss",
    "k2 as loss",
    "k3 as loss",
    "k3 x ratio as loss",
    "k3_st as loss",
)


def _surrogate(theta, ref_logp, reward, beta, use):
    """A loss whose gradient is the *exact* on-policy expectation E_{y~pi}[grad of use's loss]."""
    logp = theta.log_softmax(-1)  # [V]
    q = logp.exp().detach()  # [V] sampling probabilities
    pg = -(q * reward * logp).sum()  # REINFORCE on the task reward
    if use == "k1 in reward":  # r - beta k1 as the reward, k1 a number (no gradient)
        return pg + beta * (q * kl_k1(logp, ref_logp).detach() * logp).sum()
    if use == "k3 x ratio as loss":  # sampled from pi_old = pi (detached): ratio 1, grad not 0
        return pg + beta * (q * kl_k3_is(logp, ref_logp, logp.detach())).sum()
    fn = {"k1 as loss": kl_k1, "k2 as loss": kl_k2, "k3 as loss": kl_k3, "k3_st as loss": kl_k3_st}[
        use
    ]
    return pg + beta * (q * fn(logp, ref_logp)).sum()


def kl_bandit(
    reward, ref_probs, beta: float = 0.5, steps: int = 300, lr: float = 2.0
) -> pd.DataFrame:
    """Maximise E_pi[r] - beta KL(pi || pi_ref) over a categorical pi = softmax(theta) by exact
    expected gradients, once per way of putting the KL in (``KL_USES``); start at pi_ref.

    The optimum is pi*(y) = pi_ref(y) exp(r(y) / beta) / Z. Ways whose mean gradient is the
    reverse-KL gradient (k1 in the reward, k2, k3 x ratio, k3_st) reach it; k1 as a loss has a
    zero mean gradient (no regularisation); k3 as a loss follows the forward KL(pi_ref || pi).
    Returns one row per action: r, pi_ref, pi*, and the final pi of each way.

    >>> df = kl_bandit([1.0, 0.0, 0.0], [0.2, 0.4, 0.4], beta=1.0)
    >>> bool(abs(df["k2 as loss"] - df["pi*"]).max() < 1e-3)
    True
    """
    r = torch.as_tensor(reward, dtype=torch.float64)  # [V]
    ref = torch.as_tensor(ref_probs, dtype=torch.float64)  # [V]
    ref_logp = (ref / ref.sum()).log()  # [V]
    target = (ref_logp + r / beta).softmax(-1)  # [V]: pi*
    out = {
        "action": list(range(len(r))),
        "r": r.tolist(),
        "pi_ref": ref_logp.exp().tolist(),
        "pi*": target.tolist(),
    }
    for use in KL_USES:
        theta = ref_logp.clone().requires_grad_()
        opt = torch.optim.SGD([theta], lr=lr)
        for _ in range(steps):
            opt.zero_grad()
            _surrogate(theta, ref_logp, r, beta, use).backward()
            opt.step()
        out[use] = theta.detach().softmax(-1).tolist()
    return pd.DataFrame(out)
