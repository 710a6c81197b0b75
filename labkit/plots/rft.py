"""Figures for RFT vs GRPO (``labkit.experiments.rft``) and the R1 pipeline
(``labkit.experiments.r1_pipeline``): held-out probes against samples spent, and stage bars."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go


def curves_figure(
    curves: pd.DataFrame, y: str = "accuracy", x: str = "samples spent", by: str = "method"
) -> go.Figure:
    """Held-out ``y`` (a probe column) against ``x``, one line per ``by`` (``rft.run``'s
    ``curves`` frame). Offline RFT spends its samples before its first step: its line is
    vertical at its budget, starting from the cold start.

    >>> c = pd.DataFrame({"method": ["a", "a", "b"], "step": [0, 4, 4],
    ...                   "samples spent": [0, 256, 256], "accuracy": [.2, .3, .4]})
    >>> len(curves_figure(c).data)
    2
    """
    fig = go.Figure()
    for name, d in curves.groupby(by, sort=False):
        fig.add_scatter(
            x=d[x],
            y=d[y],
            mode="lines+markers",
            name=str(name),
            customdata=d["step"],
            hovertemplate="step %{customdata}: %{y:.3f}",
        )
    fig.update_layout(
        title=f"Held-out {y} (one sample, T = 1) against {x}",
        xaxis_title=x,
        yaxis_title=y,
        template="plotly_white",
    )
    return fig


def stages_figure(
    table: pd.DataFrame, columns=("held-out accuracy", "think rate"), length: str = "len/mean"
) -> go.Figure:
    """One bar group per row of ``table`` (a stage or method), one bar per column, and the
    mean length as a line on a second axis.

    >>> t = pd.DataFrame({"held-out accuracy": [.3, .4], "think rate": [.5, .9],
    ...                   "len/mean": [20., 30.]}, index=["cold", "RL"])
    >>> len(stages_figure(t).data)
    3
    """
    fig = go.Figure()
    for col in columns:
        fig.add_bar(x=list(table.index), y=table[col], name=col)
    fig.add_scatter(
        x=list(table.index),
        y=table[length],
        name=f"{length} (tokens)",
        yaxis="y2",
        mode="lines+markers",
    )
    fig.update_layout(
        barmode="group",
        template="plotly_white",
        title="Stage by stage",
        yaxis={"title": "rate", "range": [0, 1]},
        yaxis2={"title": "tokens", "overlaying": "y", "side": "right"},
    )
    return fig
