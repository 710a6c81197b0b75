"""Figures for the pass@k / maj@k lab (``labkit.experiments.passk``): the curves over k before and
after RL, and how much RL lifts each metric at each k, each over seeds with its 95 % interval."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from labkit.plots.seeds import PALETTE, mean_ci

STYLE = {"pass@k": "solid", "maj@k": "dot"}


def _over_seeds(d: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Per k, the mean of ``metric`` over seeds and its 95 % interval."""
    return mean_ci(d.pivot_table(index="k", columns="seed", values=metric))


def passk_figure(table: pd.DataFrame) -> go.Figure:
    """pass@k (solid) and maj@k (dotted) against k on a log axis, one colour per arm: the mean
    over seeds, error bars its 95 % interval (``passk.k_table``: arm, seed, k, pass@k, maj@k).

    >>> t = pd.DataFrame({"arm": ["a"] * 4, "seed": [0, 0, 1, 1], "k": [1, 2] * 2,
    ...                   "pass@k": [.4, .6, .5, .7], "maj@k": [.4, .4, .5, .5]})
    >>> len(passk_figure(t).data)
    2
    """
    fig = go.Figure()
    for i, (arm, d) in enumerate(table.groupby("arm", sort=False)):
        for metric, dash in STYLE.items():
            s = _over_seeds(d, metric)
            fig.add_scatter(
                x=s.index,
                y=s["mean"],
                name=f"{metric}, {arm}",
                mode="lines+markers",
                error_y={
                    "type": "data",
                    "array": s["high"] - s["mean"],
                    "arrayminus": s["mean"] - s["low"],
                    "thickness": 1,
                },
                line={"dash": dash, "color": PALETTE[i % len(PALETTE)]},
            )
    fig.update_xaxes(type="log", tickvals=sorted(table["k"].unique()), title="k (samples)")
    fig.update_layout(
        yaxis_title="fraction of held-out prompts",
        yaxis_range=[0, 1.02],
        title="pass@k and maj@k: mean over seeds, 95 % CI",
        template="plotly_white",
    )
    return fig


def lift_figure(table: pd.DataFrame, arm: str = "after RL", baseline: str = "before RL"):
    """Grouped bars per k: the paired lift ``arm`` - ``baseline`` of pass@k and of maj@k, the
    mean over seeds with its 95 % interval.

    >>> t = pd.DataFrame({"arm": ["before RL"] * 2 + ["after RL"] * 2, "seed": [0, 1] * 2,
    ...                   "k": [1] * 4, "pass@k": [.4, .4, .8, .9], "maj@k": [.4, .4, .8, .9]})
    >>> len(lift_figure(t).data)
    2
    """
    fig = go.Figure()
    wide = table.set_index(["arm", "seed", "k"])
    for metric in STYLE:
        lift = (wide.loc[arm, metric] - wide.loc[baseline, metric]).dropna()  # (seed, k)
        s = mean_ci(lift.unstack("seed"))
        fig.add_bar(
            x=[str(k) for k in s.index],
            y=s["mean"],
            name=f"{metric}: {arm} - {baseline}",
            error_y={
                "type": "data",
                "array": s["high"] - s["mean"],
                "arrayminus": s["mean"] - s["low"],
            },
        )
    fig.update_layout(
        xaxis_title="k",
        yaxis_title="lift from RL (paired over seeds)",
        barmode="group",
        title="What RL lifts at each k: mean over seeds, 95 % CI",
        template="plotly_white",
    )
    return fig
