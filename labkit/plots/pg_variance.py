"""Figures for the policy-gradient estimator lab (``labkit.experiments.pg_variance``): the
relative gradient variance per estimator, as the rewards are and with their zero moved, each the
mean over seeds with its 95 % interval."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from labkit.plots.seeds import mean_ci

SETTINGS = {"rel. var": "rewards as they are", "rel. var, reward r - 1": "every reward - 1"}


def variance_figure(summaries: pd.DataFrame, columns: dict = SETTINGS) -> go.Figure:
    """Grouped bars of the relative variance tr Cov / ||E g||^2 (log axis), one colour per
    summary column in ``columns`` (column -> legend name), one group per arm; each bar the
    mean over seeds, its error bar the 95 % interval.

    >>> s = pd.DataFrame({"arm": ["REINFORCE", "RLOO"] * 2, "seed": [0, 0, 1, 1],
    ...                   "rel. var": [.3, .7, .35, .6], "rel. var, reward r - 1": [3, .7, 2.5, .6]})
    >>> len(variance_figure(s).data)
    2
    """
    fig = go.Figure()
    for col, name in columns.items():
        wide = summaries.pivot_table(index="arm", columns="seed", values=col, sort=False)
        s = mean_ci(wide)
        fig.add_bar(
            x=list(s.index),
            y=s["mean"],
            name=name,
            error_y={
                "type": "data",
                "array": s["high"] - s["mean"],
                "arrayminus": s["mean"] - s["low"],
            },
        )
    fig.update_yaxes(type="log", title="tr Cov / ||E g||^2 (scale-free; lower is better)")
    fig.update_layout(
        barmode="group",
        template="plotly_white",
        title="Relative variance of the policy gradient at the cold start: mean over seeds, 95 % CI",
    )
    return fig
