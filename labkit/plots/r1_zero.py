"""Figures for the R1-Zero lab (``labkit.experiments.r1_zero``) and its siblings (labs 91, 92):
several training-batch metrics over steps, one panel each, one colour per arm, each line the
mean over seeds with its 95 % confidence band."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from labkit.plots.seeds import PALETTE, band_figure

COLOURS = list(PALETTE)
PANELS = {
    "accuracy": "accuracy",
    "rewards/well_formed/mean": "format rate",
    "rewards/thinks/mean": "think rate",
    "len/mean": "length (tokens)",
}
"""metric key -> panel title (training batch, per step)."""


def panels(curves: pd.DataFrame, keys: dict | None = None, arms=None, smooth: int = 5) -> go.Figure:
    """One panel per metric of ``keys`` (key -> title), one colour per arm of ``curves``
    (columns arm, seed, step, metrics: a stored result's or a live run's): the mean over seeds
    of a trailing ``smooth``-step mean, with its 95 % band.

    >>> c = pd.DataFrame({"arm": ["a"] * 4, "seed": [0, 0, 1, 1], "step": [1, 2, 1, 2],
    ...                   "accuracy": [.1, .2, .3, .2], "len/mean": [9, 8, 7, 8]})
    >>> len(panels(c, {"accuracy": "acc", "len/mean": "len"}).data)  # band + mean, twice
    4
    """
    keys = keys or PANELS
    arms = list(arms or dict.fromkeys(curves["arm"]))
    fig = make_subplots(rows=1, cols=len(keys), subplot_titles=list(keys.values()))
    for j, key in enumerate(keys):
        for trace in band_figure(curves, key, arms, smooth).data:  # each arm: band, mean
            trace.showlegend = bool(trace.showlegend is not False and j == 0)
            fig.add_trace(trace, row=1, col=j + 1)
    fig.update_layout(
        title="Training batch over steps: mean over seeds, 95 % CI band",
        template="plotly_white",
        height=330,
        width=max(500, 260 * len(keys)),
    )
    return fig
