"""Figures of lab 82 (``labkit.experiments.token_vs_sequence``): how far the token surrogate's
gradient is from the sequence surrogate's, per inner update and against the drift KL. Both read
the experiment's curves: one row per (arm, seed, step, inner update) with ``rel_err`` and ``kl``.

>>> c = pd.DataFrame({"arm": ["a"] * 4, "seed": [0, 0, 1, 1], "step": [1, 1, 1, 1],
...                   "update": [0, 1, 0, 1], "rel_err": [1e-6, 0.1, 2e-6, 0.2],
...                   "kl": [1e-12, 1e-2, 1e-12, 4e-2]})
>>> list(update_figure(c).data[0].x), len(drift_figure(c).data)   # arm a's markers, the guide
([0, 1], 2)
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from labkit.plots.seeds import PALETTE, mean_ci


def update_figure(curves: pd.DataFrame, arms=None, floor: float = 1e-9) -> go.Figure:
    """Per arm, log10 of the relative error |g_token - g_seq| / |g_seq| (floored at ``floor``)
    at each inner update k: each seed's mean over steps, then the mean over seeds and its 95 %
    interval (error bars)."""
    arms = list(arms or dict.fromkeys(curves["arm"]))
    fig = go.Figure()
    for i, arm in enumerate(arms):
        d = curves[curves["arm"] == arm].assign(y=lambda x: np.log10(x["rel_err"].clip(floor)))
        if d.empty:
            continue
        s = mean_ci(d.pivot_table(index="update", columns="seed", values="y"))  # [k, seeds]
        fig.add_scatter(
            x=list(s.index),
            y=s["mean"],
            error_y={"type": "data", "array": s["high"] - s["mean"]},
            mode="lines+markers",
            name=f"{arm} ({int(s['n'].max())} seeds)",
            line={"color": PALETTE[i % len(PALETTE)]},
        )
    fig.update_layout(
        title="How far apart the token and sequence gradients are, by inner update",
        xaxis_title="inner update k (0: pi_theta = pi_theta_old)",
        yaxis_title="log10 |g_token - g_seq| / |g_seq|",
        template="plotly_white",
    )
    return fig


def drift_figure(curves: pd.DataFrame, arms=None) -> go.Figure:
    """Every inner update of every run: the relative error against the drift, KL(mu_old ||
    pi_theta) per token, on log axes, one colour per arm; the dotted guide is slope 1/2
    (the error first order in delta, KL second), through the median point."""
    arms = list(arms or dict.fromkeys(curves["arm"]))
    d = curves[(curves["kl"] > 0) & (curves["rel_err"] > 0) & curves["arm"].isin(arms)]
    fig = go.Figure()
    for i, arm in enumerate(arms):
        a = d[d["arm"] == arm]
        fig.add_scatter(
            x=a["kl"],
            y=a["rel_err"],
            mode="markers",
            name=arm,
            marker={"color": PALETTE[i % len(PALETTE)], "size": 5, "opacity": 0.6},
        )
    if len(d):
        x = np.logspace(np.log10(d["kl"].min()), np.log10(d["kl"].max()), 20)
        c = d["rel_err"].median() / np.sqrt(d["kl"].median())
        fig.add_scatter(x=x, y=c * np.sqrt(x), mode="lines", name="slope 1/2", line={"dash": "dot"})
    fig.update_xaxes(type="log", title="drift: KL(mu_old || pi_theta) per token (k3)")
    fig.update_yaxes(type="log", title="|g_token - g_seq| / |g_seq|")
    fig.update_layout(title="The gap against the drift", template="plotly_white")
    return fig
