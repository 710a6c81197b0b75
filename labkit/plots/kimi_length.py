"""Figures for the Kimi length-penalty lab (``labkit.experiments.kimi_length``)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from labkit.plots.r1_zero import COLOURS


def tradeoff_figure(table: pd.DataFrame) -> go.Figure:
    """Held-out accuracy against the mean length of correct answers, one point per run.

    >>> t = pd.DataFrame({"accuracy": [.5, .4], "length correct": [40., 20.]}, index=["a", "b"])
    >>> len(tradeoff_figure(t).data)
    2
    """
    fig = go.Figure()
    for i, (name, r) in enumerate(table.iterrows()):
        fig.add_scatter(
            x=[r["length correct"]],
            y=[r["accuracy"]],
            mode="markers+text",
            text=[name],
            textposition="top center",
            name=name,
            marker={"size": 12, "color": COLOURS[i % len(COLOURS)]},
        )
    fig.update_layout(
        title="Held-out accuracy vs length of correct answers (T = 1)",
        xaxis_title="characters per correct answer",
        yaxis_title="accuracy",
        template="plotly_white",
    )
    return fig
