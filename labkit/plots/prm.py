"""Figures for the ORM-vs-PRM lab (``labkit.experiments.prm``): a learned reward against the
true accuracy it buys, over seeds."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from labkit.plots.seeds import band_figure

LEARNED = {"GRPO, learned ORM": "rewards/learned_orm/mean"}
LEARNED["GRPO process, learned PRM"] = "rewards/learned_prm/mean"


def exploit_figure(curves: pd.DataFrame, smooth: int = 5) -> go.Figure:
    """For each arm that learned from a verifier: its learned score and the true accuracy of
    the same training batches, mean over seeds with a 95 % band, smoothed over ``smooth``
    steps.

    >>> c = pd.DataFrame({"arm": ["GRPO, learned ORM"] * 2, "seed": [0, 0], "step": [1, 2],
    ...                   "rewards/learned_orm/mean": [.5, .6], "accuracy": [.4, .3]})
    >>> [t.name for t in exploit_figure(c).data]
    ['GRPO, learned ORM: learned score (1 seeds)', 'GRPO, learned ORM: true accuracy (1 seeds)']
    """
    frames = []
    for arm, score in LEARNED.items():
        d = curves[curves["arm"] == arm]
        if len(d) and score in d:
            for col, what in ((score, "learned score"), ("accuracy", "true accuracy")):
                frames.append(
                    d[["seed", "step", col]]
                    .rename(columns={col: "value"})
                    .assign(arm=f"{arm}: {what}")
                )
    long = pd.concat(frames) if frames else pd.DataFrame({"arm": [], "value": []})
    fig = band_figure(long, "value", smooth=smooth)
    fig.update_layout(
        title="Learned reward vs what it buys (training batches): mean over seeds, 95 % CI band",
        yaxis_title="training batch mean",
    )
    return fig
