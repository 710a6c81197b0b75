"""Figures for the R1-Zero lab (``labkit.experiments.r1_zero``) and its siblings (labs 91, 92):
several training-batch metrics over steps, one panel each, one colour per run."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

COLOURS = ["#636efa", "#ef553b", "#00cc96", "#ab63fa", "#ffa15a"]
PANELS = {
    "accuracy": "accuracy",
    "rewards/well_formed/mean": "format rate",
    "rewards/thinks/mean": "think rate",
    "len/mean": "length (tokens)",
}
"""metric key -> panel title (training batch, per step)."""


def panels(runs: dict, keys: dict | None = None, smooth: int = 5) -> go.Figure:
    """One panel per metric of ``keys`` (key -> title), one line per run (name -> RunLog);
    ``smooth`` is a trailing moving mean over steps.

    >>> class R: metrics = pd.DataFrame({"step": [1, 2], "accuracy": [.1, .2], "len/mean": [9, 8]})
    >>> len(panels({"a": R(), "b": R()}, {"accuracy": "acc", "len/mean": "len"}).data)
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
