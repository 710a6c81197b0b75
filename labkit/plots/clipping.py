"""Figures of the clipping sweep (``labkit.experiments.clipping``): clip fraction by (mu, eps)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go


def sweep_heatmap(table: pd.DataFrame, value: str = "clip/region") -> go.Figure:
    """``value`` (a column of the sweep table) on a grid: mu down, epsilon across."""
    grid = table.pivot(index="mu", columns="epsilon", values=value)  # [mu, eps]
    fig = go.Figure(
        go.Heatmap(
            z=grid.values,
            x=[f"ε = {e:g}" for e in grid.columns],
            y=[f"μ = {m}" for m in grid.index],
            text=[[f"{v:.3f}" for v in row] for row in grid.values],
            texttemplate="%{text}",
            colorscale="Reds",
            zmin=0,
            hovertemplate="%{y}, %{x}: %{text}<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"{value}, mean over steps",
        yaxis={"autorange": "reversed"},
        template="plotly_white",
        height=320,
    )
    return fig


def clip_vs_mu(table: pd.DataFrame, value: str = "clip/region") -> go.Figure:
    """``value`` against mu, one line per epsilon."""
    fig = go.Figure()
    for eps, rows in table.groupby("epsilon"):
        rows = rows.sort_values("mu")
        fig.add_scatter(x=rows["mu"], y=rows[value], mode="lines+markers", name=f"ε = {eps:g}")
    fig.update_layout(
        title=f"{value} against μ (inner updates per batch)",
        xaxis_title="μ",
        yaxis_title=value,
        template="plotly_white",
    )
    return fig
