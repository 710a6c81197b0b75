"""Figures for the R1 pipeline (``labkit.experiments.r1_pipeline``, lab 93): stage bars. RFT
vs GRPO (``labkit.experiments.rft``) draws its curves with :mod:`labkit.plots.seeds`."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go


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
