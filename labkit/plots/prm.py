"""Figures for the ORM-vs-PRM lab (``labkit.experiments.prm``): a learned reward against the
true accuracy it buys, over seeds."""

from __future__ import annotations

import re

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


def chain_steps(cell: str) -> int:
    """Steps in a correct graded thought of ``cell`` ("kxd"): (k - 1) d.

    >>> chain_steps("3x2"), chain_steps("5x1"), chain_steps("2x1")
    (4, 4, 1)
    """
    k, d = (int(x) for x in cell.split("x"))
    return (k - 1) * d


def cell_gain_figure(
    summaries: pd.DataFrame, arm: str, baseline: str, stat: str = "pass"
) -> go.Figure:
    """Per graded cell, fewest chain steps first (then fewer digits): ``arm`` - ``baseline`` of ``"<stat> (<cell>)
    after"`` paired by seed, each seed a dot, the mean with its 95 % t interval
    (``labkit.experiments.claims.interval``), and zero.

    >>> s = pd.DataFrame({"arm": ["p", "p", "o", "o"], "seed": [0, 1, 0, 1],
    ...                   "pass (3x2) after": [.5, .6, .4, .4], "pass (2x1) after": [1, 1, 1, 1]})
    >>> f = cell_gain_figure(s, "p", "o")
    >>> list(f.data[-1].x), [round(y, 3) for y in f.data[-1].y]
    (['2x1 (1 step)', '3x2 (4 steps)'], [0.0, 0.15])
    """
    from labkit.experiments.claims import interval

    cell = re.compile(rf"{re.escape(stat)} \((\d+x\d+)\) after")
    cells = [m.group(1) for m in map(cell.fullmatch, summaries.columns) if m]
    cells = sorted(cells, key=lambda c: (chain_steps(c), c[::-1]))
    by = summaries.set_index(["arm", "seed"])
    label = lambda c: f"{c} ({chain_steps(c)} step{'s' if chain_steps(c) > 1 else ''})"
    fig = go.Figure()
    means, lows, highs = [], [], []
    for c in cells:
        col = f"{stat} ({c}) after"
        d = (by.loc[arm, col] - by.loc[baseline, col]).dropna()
        fig.add_scatter(
            x=[label(c)] * len(d),
            y=d.to_numpy(),
            mode="markers",
            marker={"color": "rgba(31,119,180,0.4)", "size": 7},
            showlegend=False,
        )
        m, lo, hi = interval(d.tolist())
        means, lows, highs = [*means, m], [*lows, lo], [*highs, hi]
    fig.add_scatter(
        x=[label(c) for c in cells],
        y=means,
        mode="markers",
        name=f"mean, 95 % CI over {len(by.loc[arm])} seeds",
        marker={"color": "#1f77b4", "size": 12, "symbol": "diamond"},
        error_y={
            "type": "data",
            "array": [h - m for h, m in zip(highs, means)],
            "arrayminus": [m - lo for m, lo in zip(means, lows)],
        },
    )
    fig.add_hline(y=0, line={"color": "#444", "dash": "dot"})
    fig.update_layout(
        title=f"{stat} after RL per cell, {arm} - {baseline} (paired by seed)",
        xaxis_title="cell (operands x digits), by steps in a correct thought",
        yaxis_title=f"{stat}: {arm} - {baseline}",
        template="plotly_white",
    )
    return fig
