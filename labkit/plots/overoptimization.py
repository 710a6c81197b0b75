"""Gao et al.'s over-optimisation curve (2210.10760, fig. 1): the proxy reward and the gold reward
against d = sqrt(KL(pi || pi_init)), one line per arm, from an experiment's stored curves."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from labkit.plots.seeds import PALETTE


def gao_points(
    curves: pd.DataFrame, x: str, y: str, smooth: int = 10, bins: int = 12
) -> pd.DataFrame:
    """Per arm, ``y`` against ``x`` (each run's trailing mean over ``smooth`` steps), averaged
    over seeds within ``bins`` equal-width bins of ``x``: columns arm, x, y, runs.

    >>> c = pd.DataFrame({"arm": ["a"] * 4, "seed": [0, 0, 1, 1], "step": [1, 2, 1, 2],
    ...                   "d": [0.0, 1.0, 0.0, 1.0], "gold": [0.4, 0.2, 0.6, 0.4]})
    >>> gao_points(c, "d", "gold", smooth=1, bins=2)[["x", "y", "runs"]].values.tolist()
    [[0.0, 0.5, 2.0], [1.0, 0.30000000000000004, 2.0]]
    """
    rows = []
    for (arm, seed), run in curves.groupby(["arm", "seed"], sort=False):
        run = run.sort_values("step")
        rolled = run[[x, y]].rolling(smooth, min_periods=1).mean()
        rows.append(rolled.assign(arm=arm, seed=seed))
    df = pd.concat(rows, ignore_index=True)
    edges = pd.cut(df[x], bins=bins, include_lowest=True)
    out = df.groupby(["arm", edges], sort=False, observed=True).agg(
        x=(x, "mean"), y=(y, "mean"), runs=("seed", "nunique")
    )
    order = list(dict.fromkeys(curves["arm"]))
    out = out.reset_index(level=0).reset_index(drop=True)
    out = out.assign(runs=out["runs"].astype(float), rank=out["arm"].map(order.index))
    return out.sort_values(["rank", "x"]).drop(columns="rank").reset_index(drop=True)


def gao_figure(curves: pd.DataFrame, proxy: str, gold: str, x: str = "sqrt KL", arms=None,
               smooth: int = 10, bins: int = 12) -> go.Figure:  # fmt: skip
    """Two panels against ``x``: the proxy score (left) and the gold (right), one colour per
    arm (:func:`gao_points`): where the proxy keeps rising and the gold turns down, the proxy is
    over-optimised."""
    arms = list(arms or dict.fromkeys(curves["arm"]))
    fig = make_subplots(rows=1, cols=2, subplot_titles=(f"proxy: {proxy}", f"gold: {gold}"))
    for col, metric in ((1, proxy), (2, gold)):
        pts = gao_points(curves[curves["arm"].isin(arms)], x, metric, smooth, bins)
        for i, arm in enumerate(arms):
            p = pts[pts["arm"] == arm]
            fig.add_trace(
                go.Scatter(
                    x=p["x"],
                    y=p["y"],
                    mode="lines+markers",
                    name=arm,
                    legendgroup=arm,
                    showlegend=col == 1,
                    line={"color": PALETTE[i % len(PALETTE)]},
                ),
                row=1,
                col=col,
            )
        fig.update_xaxes(title_text="d = sqrt(KL(pi || pi_init))", row=1, col=col)
    fig.update_layout(title="Proxy and gold against the distance from pi_init (Gao et al. 2022)")
    return fig
