"""Figures for the off-policy labs (``labkit.experiments.off_policy``, ``.v32_tricks``): the
tokens PPO-clip silences and CISPO keeps, and each arm's ratio spread against its stability."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go


def silenced_figure(counts: dict) -> go.Figure:
    """Bars of :func:`labkit.experiments.off_policy.count_silenced`'s token counts on one batch.

    >>> c = {"valid tokens": 10, "tokens with A != 0": 8, "ppo clipped": 3, "ppo zero grad": 5,
    ...      "ppo zero grad, A != 0": 3, "ppo zero, cispo nonzero": 3, "cispo zero, ppo nonzero": 0}
    >>> len(silenced_figure(c).data[0].x)
    7
    """
    fig = go.Figure(
        go.Bar(
            x=list(counts),
            y=list(counts.values()),
            text=list(counts.values()),
            marker_color=["#999"] * 2 + ["#ef553b"] * 3 + ["#00cc96", "#636efa"],
        )
    )
    fig.update_layout(
        title="One batch, the mu-th update: tokens whose gradient each loss keeps",
        yaxis_title="tokens",
        template="plotly_white",
    )
    return fig


def spread_figure(summary: pd.DataFrame) -> go.Figure:
    """Per arm (rows of a ``summary`` table): the range [ratio/min, ratio/max] seen over the
    run as a bar on a log axis, with the final reward and the drawdown in the hover text.

    >>> t = pd.DataFrame({"ratio/min": [.1, .9], "ratio/max": [9., 1.1], "drawdown": [.1, .0],
    ...                   "reward (last 1/4)": [.5, .6]}, index=["a", "b"])
    >>> len(spread_figure(t).data)
    1
    """
    lo, hi = summary["ratio/min"], summary["ratio/max"]
    text = [
        f"reward {r:.3f}, drawdown {d:.3f}"
        for r, d in zip(summary["reward (last 1/4)"], summary["drawdown"])
    ]
    fig = go.Figure(
        go.Bar(x=list(summary.index), y=hi - lo, base=lo, hovertext=text, marker_color="#636efa")
    )
    fig.update_yaxes(type="log", title="importance ratio: min .. max over the run")
    fig.update_layout(title="Ratio spread per objective (log scale)", template="plotly_white")
    return fig
