"""Figures for the entropy-and-KL lab (``labkit.experiments.entropy_kl``): the reward-vs-KL
frontier of a beta sweep; ``arm_bars`` for lab 79's single-seed table."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go


def frontier_figure(
    beta: pd.DataFrame,
    kl: str = "kl/k3 (last 10%)",
    reward: str = "reward/mean (last 10%)",
    accuracy: str = "held-out accuracy",
) -> go.Figure:
    """Final reward (y) against final KL(pi_theta || pi_ref) (x), one labelled point per beta,
    joined in beta order; held-out accuracy on a second trace when the table has it
    (``beta``: one row per beta, e.g. ``labkit.experiments.entropy_kl.frontier``).

    >>> t = pd.DataFrame({"beta": [0, 0.1], "kl/k3 (last 10%)": [0.2, 0.01],
    ...                   "reward/mean (last 10%)": [.7, .6]})
    >>> len(frontier_figure(t).data)
    1
    """
    fig = go.Figure()
    text = [f"beta {b:g}" for b in beta["beta"]]
    fig.add_scatter(
        x=beta[kl],
        y=beta[reward],
        text=text,
        mode="lines+markers+text",
        textposition="top center",
        name=reward,
    )
    if accuracy in beta:
        fig.add_scatter(
            x=beta[kl],
            y=beta[accuracy],
            text=text,
            mode="lines+markers",
            name=accuracy,
            line={"dash": "dot"},
        )
    fig.update_layout(
        xaxis_title=f"final KL to pi_ref ({kl})",
        yaxis_title="final reward",
        title="The reward-KL frontier of a beta sweep (means over seeds)",
        template="plotly_white",
    )
    return fig


def arm_bars(table: pd.DataFrame, column: str, title: str = "") -> go.Figure:
    """One bar per arm (the table's index) of ``column``.

    >>> len(arm_bars(pd.DataFrame({"x": [1, 2]}, index=["a", "b"]), "x").data)
    1
    """
    fig = go.Figure(go.Bar(x=list(table.index), y=table[column], name=column))
    fig.update_layout(
        yaxis_title=column, title=title or f"{column} by arm", template="plotly_white"
    )
    return fig
