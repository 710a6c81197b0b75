"""Figure for the test-time search lab (``labkit.experiments.search``): accuracy against tokens
spent per prompt, one line per way of spending them, mean over seeds with 95 % intervals."""

from __future__ import annotations

import re

import pandas as pd
import plotly.graph_objects as go

from labkit.plots.seeds import PALETTE, mean_ci


def search_figure(curves: pd.DataFrame, summaries: pd.DataFrame) -> go.Figure:
    """Accuracy against tokens per prompt (log axis): pass@N (the oracle, dashed), majority vote
    and best-of-N by each verifier as N grows (``curves``: ``step`` = N, one column per method),
    and each beam width as a star (``summaries``: ``beam width w`` and its ``tokens``). Points
    are means over seeds, bars their 95 % t intervals.

    >>> c = pd.DataFrame({"seed": [0, 0, 1, 1], "step": [1, 2, 1, 2], "vote": [.4, .5, .5, .6],
    ...                   "tokens/prompt": [30., 60., 30., 60.]})
    >>> s = pd.DataFrame({"seed": [0, 1], "beam width 1": [.6, .7],
    ...                   "beam width 1 tokens": [90., 95.]})
    >>> [t.name for t in search_figure(c, s).data]
    ['vote', 'beam search, width 1']
    """
    fig = go.Figure()
    tokens = curves.groupby("step")["tokens/prompt"].mean()
    methods = [c for c in curves.columns if c not in ("arm", "seed", "step", "tokens/prompt")]
    for i, method in enumerate(methods):
        s = mean_ci(curves.pivot_table(index="step", columns="seed", values=method))
        fig.add_scatter(
            x=tokens.loc[s.index],
            y=s["mean"],
            name=method,
            mode="lines+markers",
            text=[f"N={n}" for n in s.index],
            error_y={"type": "data", "array": s["high"] - s["mean"], "thickness": 1},
            line={"dash": "dash" if "oracle" in method else "solid", "color": PALETTE[i]},
        )
    widths = [m.group(1) for c in summaries for m in [re.fullmatch(r"beam width (\d+)", c)] if m]
    for w in widths:
        acc = mean_ci(summaries[[f"beam width {w}"]].T).iloc[0]
        fig.add_scatter(
            x=[summaries[f"beam width {w} tokens"].mean()],
            y=[acc["mean"]],
            name=f"beam search, width {w}",
            mode="markers",
            marker={"size": 12, "symbol": "star"},
            error_y={"type": "data", "array": [acc["high"] - acc["mean"]], "thickness": 1},
        )
    fig.update_xaxes(type="log", title="tokens sampled per prompt")
    fig.update_layout(
        yaxis_title="held-out accuracy",
        yaxis_range=[0, 1.02],
        title="Test-time search: accuracy against tokens spent (mean over seeds, 95 % CI)",
        template="plotly_white",
    )
    return fig
