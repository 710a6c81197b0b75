"""Figures for the entropy-and-KL lab (``labkit.experiments.entropy_kl``) and the PPO-as-the-seed
lab (``labkit.experiments.ppo_seed``): the reward-vs-KL frontier of a beta sweep, and one bar
per arm of a table column."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go


def frontier_figure(
    beta: pd.DataFrame, kl: str = "kl/k3 last", reward: str = "reward last"
) -> go.Figure:
    """Final reward (y) against final KL(pi_theta || pi_ref) (x), one labelled point per beta,
    joined in beta order; held-out accuracy on a second trace when the table has it.

    >>> t = pd.DataFrame({"beta": [0, 0.1], "kl/k3 last": [0.2, 0.01], "reward last": [.7, .6]})
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
    if "heldout acc" in beta:
        fig.add_scatter(
            x=beta[kl],
            y=beta["heldout acc"],
            text=text,
            mode="lines+markers",
            name="held-out accuracy",
            line={"dash": "dot"},
        )
    fig.update_layout(
        xaxis_title=f"final KL to pi_ref ({kl})",
        yaxis_title="final reward",
        title="The reward-KL frontier of a beta sweep",
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
