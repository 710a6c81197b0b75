"""Figures for the language-consistency lab (``labkit.experiments.language``)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from labkit.plots.r1_zero import COLOURS, PANELS

KEYS = {
    "rewards/mixed/mean": "mixing rate (thoughts)",
    "rewards/language_consistency/mean": "share of steps in digits",
    "accuracy": "accuracy",
    "rewards/thinks/mean": "think rate",
}
"""metric key -> panel title (training batch, per step)."""


def mixing_figure(runs: dict, smooth: int = 5) -> go.Figure:
    """Mixing rate, digit share, accuracy and think rate over steps, one line per run."""
    return run_panels(runs, KEYS, smooth)


def run_panels(runs: dict, keys: dict | None = None, smooth: int = 5) -> go.Figure:
    """One panel per metric of ``keys`` (key -> title, default: ``r1_zero.PANELS``), one line
    per run (name -> RunLog) of a single-seed lab (91, 92); ``smooth`` is a trailing moving mean
    over steps.

    >>> class R: metrics = pd.DataFrame({"step": [1, 2], "accuracy": [.1, .2], "len/mean": [9, 8]})
    >>> len(run_panels({"a": R(), "b": R()}, {"accuracy": "acc", "len/mean": "len"}).data)
    4
    """
    keys = keys or PANELS
    fig = make_subplots(rows=1, cols=len(keys), subplot_titles=list(keys.values()))
    for i, (name, log) in enumerate(runs.items()):
        m = log.metrics
        for j, key in enumerate(keys):
            if key not in m.columns:
                continue
            y = pd.to_numeric(m[key], errors="coerce").rolling(smooth, min_periods=1).mean()
            fig.add_scatter(
                x=m["step"],
                y=y,
                mode="lines",
                name=name,
                legendgroup=name,
                showlegend=j == 0,
                line={"color": COLOURS[i % len(COLOURS)]},
                row=1,
                col=j + 1,
            )
    fig.update_layout(
        title="Training batch over steps",
        template="plotly_white",
        height=330,
        width=max(500, 260 * len(keys)),
    )
    return fig
