"""Figures for the pass@k / maj@k lab (``labkit.experiments.passk``): the curves before and
after RL, and how much RL lifts each metric at each k."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

STYLE = {"pass@k": "solid", "maj@k": "dot"}


def passk_figure(curves: pd.DataFrame) -> go.Figure:
    """pass@k (solid) and maj@k (dotted) against k on a log2 axis, one colour per model;
    error bars are one standard error across prompts.

    >>> df = pd.DataFrame({"k": [1, 2] * 2, "pass@k": [.4, .6, .8, .9], "pass@k se": [0] * 4,
    ...                    "maj@k": [.4, .5, .8, .85], "maj@k se": [0] * 4,
    ...                    "model": ["base"] * 2 + ["rl"] * 2})
    >>> len(passk_figure(df).data)
    4
    """
    fig = go.Figure()
    colours = ["#636efa", "#ef553b", "#00cc96", "#ab63fa"]
    for i, (model, d) in enumerate(curves.groupby("model", sort=False)):
        for metric, dash in STYLE.items():
            fig.add_scatter(
                x=d["k"],
                y=d[metric],
                name=f"{metric}, {model}",
                mode="lines+markers",
                error_y={"type": "data", "array": d[f"{metric} se"], "thickness": 1},
                line={"dash": dash, "color": colours[i % len(colours)]},
            )
    fig.update_xaxes(type="log", tickvals=sorted(curves["k"].unique()), title="k (samples)")
    fig.update_layout(
        yaxis_title="fraction of held-out prompts",
        yaxis_range=[0, 1.02],
        title="pass@k and maj@k before and after RL",
    )
    return fig


def lift_figure(lifts: pd.DataFrame) -> go.Figure:
    """Grouped bars per k: after - before for pass@k and for maj@k (``passk.lifts`` table).

    >>> t = pd.DataFrame({"pass@k lift": [.3, .0], "maj@k lift": [.3, .4]}, index=[1, 64])
    >>> len(lift_figure(t).data)
    2
    """
    fig = go.Figure()
    x = [str(k) for k in lifts.index]
    for metric in STYLE:
        fig.add_bar(x=x, y=lifts[f"{metric} lift"], name=f"{metric}: after - before")
    fig.update_layout(
        xaxis_title="k",
        yaxis_title="lift from RL",
        barmode="group",
        title="What RL lifts: pass@1 and maj@k, not pass@k at large k",
    )
    return fig
