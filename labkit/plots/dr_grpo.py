"""Figures for the Dr. GRPO lab (``labkit.experiments.dr_grpo``): lengths of correct and
incorrect completions over steps, and the advantage each kind of group receives."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

COLOURS = ["#636efa", "#ef553b", "#00cc96", "#ab63fa"]


def length_figure(curves: pd.DataFrame, smooth: int = 5) -> go.Figure:
    """``len/incorrect`` (solid) and ``len/correct`` (dotted) over steps, one colour per arm,
    each the mean over seeds of an experiment's ``curves`` (columns arm, seed, step, ...);
    ``smooth`` is a trailing moving mean over steps.

    >>> c = pd.DataFrame({"arm": ["grpo"] * 2 + ["dr_grpo"] * 2, "seed": 0, "step": [1, 2] * 2,
    ...                   "len/incorrect": [5., 6., 5., 4.], "len/correct": [4., 3., 4., 4.]})
    >>> len(length_figure(c).data)
    4
    """
    fig = go.Figure()
    for i, (arm, d) in enumerate(curves.groupby("arm", sort=False)):
        mean = d.groupby("step")[["len/incorrect", "len/correct"]].mean()
        for key, dash in (("len/incorrect", "solid"), ("len/correct", "dot")):
            fig.add_scatter(
                x=mean.index,
                y=mean[key].rolling(smooth, min_periods=1).mean(),
                mode="lines",
                name=f"{arm}: {key}",
                line={"dash": dash, "color": COLOURS[i % len(COLOURS)]},
            )
    fig.update_layout(
        title="Completion length (tokens) of correct and incorrect answers, mean over seeds",
        xaxis_title="step",
        yaxis_title="tokens",
        template="plotly_white",
    )
    return fig


def std_bias_figure(std: pd.DataFrame) -> go.Figure:
    """Grouped bars: mean |A_i| of a group by its accuracy k/G, one bar per run.

    >>> d = pd.DataFrame({"group accuracy": [.25, .5] * 2, "mean |A|": [.75, .87, .38, .5],
    ...                   "run": ["grpo"] * 2 + ["dr_grpo"] * 2})
    >>> len(std_bias_figure(d).data)
    2
    """
    fig = go.Figure()
    for name, d in std.groupby("run", sort=False):
        fig.add_bar(x=[f"{a:.2f}" for a in d["group accuracy"]], y=d["mean |A|"], name=name)
    fig.update_layout(
        title="Advantage magnitude by group accuracy (how hard the question is)",
        xaxis_title="fraction of the group answered correctly",
        yaxis_title="mean |A|",
        barmode="group",
        template="plotly_white",
    )
    return fig
