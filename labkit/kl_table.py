"""Schulman's KL-estimator table by Monte Carlo, next to its closed forms and the published numbers.

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

from labkit.core.kl import kl_k1, kl_k2, kl_k3

ESTIMATORS = {"k1": kl_k1, "k2": kl_k2, "k3": kl_k3}
# Schulman's published table: (mu, estimator) -> (bias/KL, std/KL)
PUBLISHED = {
    (0.1, "k1"): (0.0, 20.0), (0.1, "k2"): (0.002, 1.42), (0.1, "k3"): (0.0, 1.42),
    (1.0, "k1"): (0.0, 2.0), (1.0, "k2"): (0.25, 1.73), (1.0, "k3"): (0.0, 1.70),
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
        "bias/KL": float((mean - kl) / kl), "bias/KL se": float(s / math.sqrt(n) / kl),
        "std/KL": float(s / kl), "std/KL se": float(se_std / kl),
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
            rows.append({
                "mu": mu, "estimator": name, "KL": kl, **_moments(fn(log_q, log_p), kl),
                "bias/KL closed": bias, "std/KL closed": std,
                "bias/KL published": pub[0], "std/KL published": pub[1],
            })
    return pd.DataFrame(rows)
