"""Figure for the test-time search lab (``labkit.experiments.search``): accuracy against tokens
spent per prompt, one line per way of spending them."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go


def search_figure(curves: pd.DataFrame, beam: list[dict] | None = None) -> go.Figure:
    """Accuracy (held-out, one standard error) against tokens per prompt on a log axis: pass@N
    (the oracle, dashed), majority vote and best-of-N by each verifier as N grows, and beam
    search as points.

    >>> df = pd.DataFrame({"method": ["vote"] * 2, "N": [1, 2], "accuracy": [.4, .5],
    ...                    "se": [0, 0], "tokens/prompt": [30, 60]})
    >>> len(search_figure(df, [{"method": "beam", "N": 8, "accuracy": .6, "se": 0,
    ...                         "tokens/prompt": 90, "width": 2}]).data)
    2
    """
    fig = go.Figure()
    for method, d in curves.groupby("method", sort=False):
        fig.add_scatter(
            x=d["tokens/prompt"],
            y=d["accuracy"],
            name=method,
            mode="lines+markers",
            text=[f"N={n}" for n in d["N"]],
            error_y={"type": "data", "array": d["se"], "thickness": 1},
            line={"dash": "dash" if "oracle" in method else "solid"},
        )
    if beam:
        b = pd.DataFrame(beam)
        fig.add_scatter(
            x=b["tokens/prompt"],
            y=b["accuracy"],
            name="beam search, PRM",
            mode="markers+text",
            text=[f"width {w}" for w in b["width"]],
            textposition="top center",
            marker={"size": 11, "symbol": "star"},
            error_y={"type": "data", "array": b["se"], "thickness": 1},
        )
    fig.update_xaxes(type="log", title="tokens sampled per prompt")
    fig.update_layout(
        yaxis_title="held-out accuracy",
        yaxis_range=[0, 1.02],
        title="Test-time search: accuracy against tokens spent",
    )
    return fig
