"""The KL explorer's numbers and figure: k1/k2/k3 sampled from q, against the exact values.

Two settings, one parameter mu:
- ``gaussian``: q = N(0, 1), p = N(mu, 1) (Schulman 2020): KL = mu^2/2, closed forms of each
  estimator's bias and std from :func:`labkit.kl_table.closed_form`;
- ``categorical``: q = softmax(a), p = softmax(a + mu b) over V = 8 outcomes (fixed a, b): the
  exact KL and each estimator's exact mean and std by summing over the V outcomes.
Estimators are labkit's own ``kl_k1/kl_k2/kl_k3`` on (log q(x), log p(x)), x ~ q.
"""

from __future__ import annotations

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from labkit.core.kl import kl_k1, kl_k2, kl_k3
from labkit.experiments.kl_table import closed_form

ESTIMATORS = {"k1": kl_k1, "k2": kl_k2, "k3": kl_k3}
SETTINGS = ("gaussian", "categorical")
V = 8
_A = torch.linspace(1.0, -1.0, V, dtype=torch.float64)  # logits of q
_B = torch.tensor([1.0, -1.0] * (V // 2), dtype=torch.float64)  # direction p moves in


def _categorical(mu: float):
    log_q = _A.log_softmax(-1)  # [V]
    log_p = (_A + mu * _B).log_softmax(-1)  # [V]
    return log_q, log_p


def exact_moments(setting: str, mu: float) -> dict:
    """{"KL": KL(q||p), "<k> bias/KL": ..., "<k> std/KL": ...}: closed forms (gaussian) or exact
    sums over outcomes (categorical).

    >>> round(exact_moments("gaussian", 1.0)["k2 bias/KL"], 4)
    0.25
    >>> m = exact_moments("categorical", 0.5); abs(m["k1 bias/KL"]) < 1e-12
    True
    """
    if setting not in SETTINGS:
        raise ValueError(f"setting={setting!r} is not one of {SETTINGS}")
    if mu == 0:
        raise ValueError("mu=0: q = p, KL = 0 and bias/KL is undefined; use mu != 0")
    if setting == "gaussian":
        out = {"KL": mu * mu / 2}
        for k in ESTIMATORS:
            out[f"{k} bias/KL"], out[f"{k} std/KL"] = closed_form(abs(mu), k)
        return out
    log_q, log_p = _categorical(mu)
    q = log_q.exp()  # [V]
    kl = float((q * (log_q - log_p)).sum())
    out = {"KL": kl}
    for name, fn in ESTIMATORS.items():
        k = fn(log_q, log_p)  # [V] the estimator's value at each outcome
        mean = (q * k).sum()
        out[f"{name} bias/KL"] = float((mean - kl) / kl)
        out[f"{name} std/KL"] = float((q * (k - mean) ** 2).sum().sqrt() / kl)
    return out


def sample_estimators(setting: str, mu: float, n: int = 20_000, seed: int = 0) -> dict:
    """n samples x ~ q and each estimator's values there: {"k1": tensor [n], ...}."""
    g = torch.Generator().manual_seed(seed)
    if setting == "gaussian":
        x = torch.randn(n, generator=g, dtype=torch.float64)  # [N]
        log_q, log_p = -0.5 * x**2, -0.5 * (x - mu) ** 2  # [N]; the log sqrt(2 pi) cancels
    else:
        lq, lp = _categorical(mu)
        idx = torch.multinomial(lq.exp(), n, replacement=True, generator=g)  # [N]
        log_q, log_p = lq[idx], lp[idx]
    return {k: fn(log_q, log_p) for k, fn in ESTIMATORS.items()}


def kl_explorer_table(setting: str, mu: float, n: int = 20_000, seed: int = 0) -> list[dict]:
    """One row per estimator: Monte-Carlo bias/KL and std/KL next to the exact values."""
    ex = exact_moments(setting, mu)
    rows = []
    for k, vals in sample_estimators(setting, mu, n, seed).items():
        rows.append(
            {
                "estimator": k,
                "MC bias/KL": float(vals.mean() / ex["KL"] - 1),
                "exact bias/KL": ex[f"{k} bias/KL"],
                "MC std/KL": float(vals.std() / ex["KL"]),
                "exact std/KL": ex[f"{k} std/KL"],
            }
        )
    return rows


def kl_explorer_figure(
    setting: str = "gaussian", mu: float = 1.0, n: int = 20_000, seed: int = 0
) -> go.Figure:
    """Histograms of k1, k2, k3 over n samples (the true KL as a line) and a table of bias/KL
    and std/KL, Monte Carlo against exact. Traces: 3 histograms, then the table."""
    samples = sample_estimators(setting, mu, n, seed)
    rows = kl_explorer_table(setting, mu, n, seed)
    kl = exact_moments(setting, mu)["KL"]
    fig = make_subplots(
        rows=2,
        cols=3,
        specs=[[{}, {}, {}], [{"type": "table", "colspan": 3}, None, None]],
        subplot_titles=list(samples),
        row_heights=[0.62, 0.38],
        vertical_spacing=0.1,
    )
    for j, (k, vals) in enumerate(samples.items(), start=1):
        v = vals.float().numpy()
        lo, hi = float(v.min()), float(max(v.max(), kl))
        fig.add_histogram(
            x=v,
            name=k,
            nbinsx=60,
            row=1,
            col=j,
            xbins={"start": lo, "end": hi + 1e-9, "size": (hi - lo) / 60 or 1},
        )
    fig.add_table(
        header={"values": list(rows[0])},
        cells={
            "values": [
                [r[c] if isinstance(r[c], str) else f"{r[c]:.4f}" for r in rows] for c in rows[0]
            ]
        },
        row=2,
        col=1,
    )
    fig.update_layout(
        title=f"{setting}, mu = {mu:g}: KL(q||p) = {kl:.4f} (dotted line)",
        showlegend=False,
        height=520,
        shapes=kl_lines(kl),
    )
    return fig


def kl_lines(kl: float) -> list[dict]:
    """A dotted vertical line at the true KL in each of the three histograms."""
    return [
        {
            "type": "line",
            "x0": kl,
            "x1": kl,
            "xref": f"x{'' if j == 1 else j}",
            "y0": 0,
            "y1": 1,
            "yref": f"y{'' if j == 1 else j} domain",
            "line": {"dash": "dot", "color": "black"},
        }
        for j in (1, 2, 3)
    ]
