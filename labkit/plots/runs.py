"""Several runs on one figure: any metric overlaid, forks marked where they branch."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from labkit.plots.training import _xy, event_label
from labkit.runs.compare import named_runs


def compare_figure(runs: dict, metric: str, smooth: int = 1) -> go.Figure:
    """One line per run (``runs``: name -> RunLog); ``smooth`` > 1 is a trailing moving mean.

    A fork's branch point is a marker labelled with what the branch changed.
    """
    fig = go.Figure()
    for name, run in runs.items():
        m = run.metrics
        if metric not in m.columns:
            continue
        x, y = _xy(m, metric, smooth)
        fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=name))
        ev = run.events
        for row in ev[ev["kind"] == "fork"].to_dict("records") if "kind" in ev else []:
            at = m[m["step"] == row["step"]]
            if len(at):
                fig.add_trace(
                    go.Scatter(
                        x=[row["step"]],
                        y=[y[at.index[0]]],
                        mode="markers",
                        marker={"symbol": "diamond", "size": 10},
                        showlegend=False,
                        hovertext=f"{name} forks: {event_label(row)}",
                        hoverinfo="text",
                    )
                )
    fig.update_layout(
        title=f"{metric} by run", xaxis_title="step", yaxis_title=metric, template="plotly_white"
    )
    return fig


def metric_curves(run, keys, title: str = "", smooth: int = 1) -> go.Figure:
    """Lines of several metrics of one run (a RunLog or its metrics DataFrame) over steps."""
    m = run if isinstance(run, pd.DataFrame) else run.metrics
    fig = go.Figure()
    for key in keys:
        if key in m.columns:
            x, y = _xy(m, key, smooth)
            fig.add_trace(go.Scatter(x=x, y=y, mode="lines", name=key))
    fig.update_layout(title=title or ", ".join(keys), xaxis_title="step", template="plotly_white")
    return fig


def compare_runs(runs, metric: str = "reward/mean", smooth: int = 1) -> go.Figure:
    """A plotly figure overlaying ``metric`` of several runs (names, folders or RunLogs, or a
    dict {name: run} to name in-memory runs);
    a fork's history up to its branch step is its parent's, so branches split visibly."""
    return compare_figure(named_runs(runs), metric, smooth)
