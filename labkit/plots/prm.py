"""Figures for the ORM-vs-PRM lab (``labkit.experiments.prm``): held-out accuracy over training
per arm, and a learned reward against the true accuracy it buys."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go


def heldout_figure(heldout: pd.DataFrame, metric: str = "accuracy") -> go.Figure:
    """``metric`` (held-out, sampled T = 1) against training step, one line per arm; outcome
    arms dotted, process arms solid.

    >>> h = pd.DataFrame({"arm": ["a", "a"], "step": [0, 10], "accuracy": [.3, .5]})
    >>> len(heldout_figure(h).data)
    1
    """
    fig = go.Figure()
    for arm, d in heldout.groupby("arm", sort=False):
        fig.add_scatter(
            x=d["step"],
            y=d[metric],
            name=arm,
            mode="lines+markers",
            line={"dash": "dot" if "outcome" in arm or "ORM" in arm else "solid"},
        )
    fig.update_layout(
        xaxis_title="RL step",
        yaxis_title=f"held-out {metric}",
        title=f"Outcome vs process supervision: held-out {metric}",
    )
    return fig


def exploit_figure(runs: dict, window: int = 5) -> go.Figure:
    """For each run with a learned reward: its learned score (solid) and the true accuracy of
    the same training batches (dotted), smoothed over ``window`` steps."""
    fig = go.Figure()
    for name, log in runs.items():
        m = log.metrics
        learned = [c for c in m.columns if c.startswith("rewards/learned_")]
        if not learned:
            continue
        for col, dash, label in (
            (learned[0], "solid", "learned score"),
            ("rewards/answer_match/mean", "dot", "true accuracy"),
        ):
            fig.add_scatter(
                x=m["step"],
                y=m[col].rolling(window, min_periods=1).mean(),
                name=f"{name}: {label}",
                line={"dash": dash},
            )
    fig.update_layout(
        xaxis_title="RL step",
        yaxis_title="training batch mean",
        title="Learned reward vs what it buys (training batches)",
    )
    return fig
