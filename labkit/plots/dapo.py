"""Figures for the DAPO ablation lab (``labkit.experiments.dapo``): accuracy against the cost
of getting it (samples drawn, wall time), and the summary table as bars."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go


def efficiency_figure(eff: pd.DataFrame, x: str = "samples drawn", smooth: int = 5) -> go.Figure:
    """Training accuracy (trailing mean over ``smooth`` steps) against ``x``: 'samples drawn',
    'seconds' or 'step', one line per run (``dapo.efficiency``'s frame).

    >>> e = pd.DataFrame({"run": ["a", "a", "b"], "accuracy": [.2, .4, .3],
    ...                   "samples drawn": [64, 128, 128], "seconds": [1., 2., 2.]})
    >>> len(efficiency_figure(e, "seconds").data)
    2
    """
    fig = go.Figure()
    for name, d in eff.groupby("run", sort=False):
        y = d["accuracy"].rolling(smooth, min_periods=1).mean()
        fig.add_scatter(x=d[x], y=y, mode="lines", name=name)
    fig.update_layout(
        title=f"Training accuracy against {x}",
        xaxis_title=x,
        yaxis_title=f"accuracy (mean of {smooth} steps)",
        template="plotly_white",
    )
    return fig


def table_figure(
    table: pd.DataFrame, columns=("held-out accuracy", "entropy (last 10%)", "truncated (last 10%)")
) -> go.Figure:
    """One bar group per variant (rows of ``dapo.run``'s table), one bar per column.

    >>> t = pd.DataFrame({"held-out accuracy": [.3, .4], "entropy (last 10%)": [1., .5],
    ...                   "truncated (last 10%)": [.1, 0.]}, index=["naive", "+ x"])
    >>> len(table_figure(t).data)
    3
    """
    fig = go.Figure()
    for col in columns:
        fig.add_bar(x=list(table.index), y=table[col], name=col)
    fig.update_layout(
        title="DAPO piece by piece (each piece alone on naive GRPO)",
        barmode="group",
        template="plotly_white",
    )
    return fig
