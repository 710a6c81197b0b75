"""Figures for the policy-gradient estimator lab (``labkit.experiments.pg_variance``): relative
gradient variance per estimator and setting, and reward against wall-clock seconds."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go


def variance_figure(table: pd.DataFrame) -> go.Figure:
    """Grouped bars of the relative variance tr Cov / ||E g||^2 (log axis), one colour per
    setting, error bars one jackknife SE (``pg_variance.variance`` rows with a ``setting``).

    >>> df = pd.DataFrame({"estimator": ["REINFORCE", "RLOO"] * 2, "rel_var": [.3, .7, 4., .7],
    ...                    "rel_var se": [.1] * 4, "setting": ["a", "a", "b", "b"]})
    >>> len(variance_figure(df).data)
    2
    """
    fig = go.Figure()
    for setting, d in table.groupby("setting", sort=False):
        fig.add_bar(
            x=d["estimator"],
            y=d["rel_var"],
            name=setting,
            error_y={"type": "data", "array": d["rel_var se"], "thickness": 1},
        )
    fig.update_yaxes(type="log", title="tr Cov / ||E g||^2 (scale-free; lower is better)")
    fig.update_layout(
        barmode="group",
        template="plotly_white",
        title="Relative variance of the policy gradient at a fixed policy",
    )
    return fig


def reward_vs_seconds(logs: dict, smooth: int = 1) -> go.Figure:
    """reward/mean against cumulative wall-clock seconds (``time/step``), one line per run
    (``logs``: name -> RunLog or metrics DataFrame); ``smooth`` > 1 a trailing moving mean.

    >>> m = pd.DataFrame({"step": [1, 2], "reward/mean": [.2, .4], "time/step": [.5, .5]})
    >>> reward_vs_seconds({"a": m}).data[0].x.tolist()
    [0.5, 1.0]
    """
    fig = go.Figure()
    for name, log in logs.items():
        m = log if isinstance(log, pd.DataFrame) else log.metrics
        y = m["reward/mean"].rolling(smooth, min_periods=1).mean()
        fig.add_scatter(x=m["time/step"].cumsum(), y=y, mode="lines", name=name)
    fig.update_layout(
        xaxis_title="wall-clock seconds of training",
        yaxis_title="reward/mean",
        template="plotly_white",
        title="Reward per second of training",
    )
    return fig
