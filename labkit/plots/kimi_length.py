"""Figures for the Kimi length-penalty lab (``labkit.experiments.kimi_length``)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from labkit.plots.r1_zero import COLOURS
from labkit.plots.seeds import mean_ci


def tradeoff_figure(summaries: pd.DataFrame, arms=None) -> go.Figure:
    """Held-out accuracy against the mean length of correct answers, one point per arm: the
    mean over seeds with its 95 % interval on both axes (``summaries``: arm, seed, accuracy,
    length correct).

    >>> s = pd.DataFrame({"arm": ["a", "a", "b", "b"], "seed": [0, 1, 0, 1],
    ...                   "accuracy": [.5, .4, .3, .4], "length correct": [40., 42., 20., 21.]})
    >>> len(tradeoff_figure(s).data)
    2
    """
    fig = go.Figure()
    for i, arm in enumerate(arms or dict.fromkeys(summaries["arm"])):
        d = summaries[summaries["arm"] == arm]
        x, y = (
            mean_ci(pd.DataFrame([d[c].dropna().to_numpy()])).iloc[0]
            for c in ("length correct", "accuracy")
        )
        fig.add_scatter(
            x=[x["mean"]],
            y=[y["mean"]],
            error_x={"type": "data", "array": [x["high"] - x["mean"]]},
            error_y={"type": "data", "array": [y["high"] - y["mean"]]},
            mode="markers+text",
            text=[arm],
            textposition="top center",
            name=f"{arm} ({len(d)} seeds)",
            marker={"size": 12, "color": COLOURS[i % len(COLOURS)]},
        )
    fig.update_layout(
        title="Held-out accuracy vs length of correct answers (T = 1): mean over seeds, 95 % CI",
        xaxis_title="characters per correct answer",
        yaxis_title="accuracy",
        template="plotly_white",
    )
    return fig
