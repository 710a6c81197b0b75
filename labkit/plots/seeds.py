"""Figures of an experiment over seeds (``labkit.experiments.harness.Result``): each arm's curve
as the mean over seeds with a 95 % confidence band, each arm's summary with its interval, and
each claim's paired effect with its interval against zero (a forest plot), coloured by verdict.

>>> import pandas as pd
>>> c = pd.DataFrame({"arm": ["a"] * 4, "seed": [0, 0, 1, 1], "step": [1, 2, 1, 2],
...                   "entropy": [1.0, 0.8, 1.2, 0.9]})
>>> len(band_figure(c, "entropy").data)  # the band and the mean line of arm "a"
2
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots
from scipy import stats

PALETTE = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#9467bd",
    "#ff7f0e",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
VERDICT_COLORS = {"reproduced": "#2ca02c", "not reproduced": "#d62728", "inconclusive": "#7f7f7f"}


def _rgba(hex_color: str, alpha: float) -> str:
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def mean_ci(values: pd.DataFrame) -> pd.DataFrame:
    """Per row of ``values`` (columns: seeds), the mean and its 95 % t interval."""
    n = values.notna().sum(axis=1)
    mean, sem = values.mean(axis=1), values.sem(axis=1)
    half = sem * stats.t.ppf(0.975, (n - 1).clip(lower=1))
    return pd.DataFrame({"mean": mean, "low": mean - half, "high": mean + half, "n": n})


def band_figure(curves: pd.DataFrame, metric: str, arms=None, smooth: int = 1) -> go.Figure:
    """``metric`` over steps, one colour per arm: the mean over seeds (line) and its 95 %
    confidence band (shaded; none with one seed). ``smooth`` > 1: a trailing mean per seed
    first."""
    fig = go.Figure()
    arms = list(arms or (dict.fromkeys(curves["arm"]) if "arm" in curves else []))
    for i, arm in enumerate(arms):
        d = curves[curves["arm"] == arm] if "arm" in curves else curves.iloc[:0]
        if metric not in d or d[metric].isna().all():
            continue
        wide = d.pivot_table(index="step", columns="seed", values=metric)
        wide = wide.rolling(smooth, min_periods=1).mean()
        s, color = mean_ci(wide), PALETTE[i % len(PALETTE)]
        if (s["n"] > 1).any():
            fig.add_scatter(
                x=[*s.index, *s.index[::-1]],
                y=[*s["high"], *s["low"][::-1]],
                fill="toself",
                fillcolor=_rgba(color, 0.18),
                line={"width": 0},
                hoverinfo="skip",
                showlegend=False,
                legendgroup=arm,
            )
        fig.add_scatter(
            x=s.index,
            y=s["mean"],
            mode="lines",
            name=f"{arm} ({int(s['n'].max())} seeds)",
            line={"color": color},
            legendgroup=arm,
        )
    fig.update_layout(
        title=f"{metric}: mean over seeds, 95 % CI band",
        xaxis_title="step",
        yaxis_title=metric,
        template="plotly_white",
    )
    return fig


def summary_figure(summaries: pd.DataFrame, metric: str, arms=None) -> go.Figure:
    """Each arm's ``metric``: every seed as a dot, the mean with its 95 % interval."""
    fig = go.Figure()
    arms = list(arms or dict.fromkeys(summaries["arm"]))
    for i, arm in enumerate(arms):
        v = summaries.loc[summaries["arm"] == arm, metric].dropna()
        s = mean_ci(pd.DataFrame([v.to_numpy()])).iloc[0]
        color = PALETTE[i % len(PALETTE)]
        fig.add_scatter(
            x=[arm] * len(v),
            y=v,
            mode="markers",
            showlegend=False,
            marker={"color": _rgba(color, 0.45), "size": 7},
        )
        fig.add_scatter(
            x=[arm],
            y=[s["mean"]],
            mode="markers",
            showlegend=False,
            marker={"color": color, "size": 12, "symbol": "diamond"},
            error_y={
                "type": "data",
                "array": [s["high"] - s["mean"]],
                "arrayminus": [s["mean"] - s["low"]],
            },
        )
    fig.update_layout(
        title=f"{metric} per arm: seeds, mean and 95 % CI",
        yaxis_title=metric,
        template="plotly_white",
    )
    return fig


def claims_figure(table: pd.DataFrame) -> go.Figure:
    """``Result.claims_table()`` as one row per claim, each on its own axis (claims are judged
    in different metrics): the paired effect over seeds, its 95 % CI, and zero, coloured by
    verdict (green reproduced, red not reproduced, grey inconclusive)."""
    n = len(table)
    fig = make_subplots(
        rows=max(n, 1),
        cols=1,
        subplot_titles=list(table["claim"]),
        vertical_spacing=min(0.08, 0.5 / max(n, 1)),
    )
    for i, row in enumerate(table.to_dict("records"), 1):
        color = VERDICT_COLORS[row["verdict"]]
        fig.add_scatter(
            x=[row["effect"]],
            y=[row["verdict"]],
            mode="markers",
            marker={"color": color, "size": 11},
            error_x={
                "type": "data",
                "array": [row["ci_high"] - row["effect"]],
                "arrayminus": [row["effect"] - row["ci_low"]],
            },
            showlegend=False,
            hovertext=f"{row['rule']}; {row['seeds']} seeds",
            row=i,
            col=1,
        )
        fig.add_vline(x=0, line={"color": "#444", "dash": "dot"}, row=i, col=1)
        fig.update_xaxes(title_text=row["metric"], title_standoff=2, row=i, col=1)
    fig.update_annotations(font_size=12)
    fig.update_layout(
        title="Claims: paired effect (arm - baseline) over seeds, 95 % CI",
        template="plotly_white",
        height=90 + 110 * max(n, 1),
    )
    return fig
