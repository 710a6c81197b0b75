"""Figures for the loss-aggregation lab: how much each token weighs under each ``loss_type``."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from labkit.core.policy import token_weights

LOSS_TYPES_SHOWN = ("grpo", "bnpo", "dr_grpo", "dapo")


def lengths_to_mask(lengths, T: int | None = None) -> torch.Tensor:
    """[B] lengths -> [B, T] float mask with each row's first ``length`` entries 1.

    >>> lengths_to_mask([2, 0, 3])
    tensor([[1., 1., 0.],
            [0., 0., 0.],
            [1., 1., 1.]])
    """
    L = torch.as_tensor(lengths)  # [B]
    T = int(L.max()) if T is None else T
    return (torch.arange(T) < L[:, None]).float()  # [B, T]


def token_weights_figure(lengths, loss_types=LOSS_TYPES_SHOWN, max_completion_length=None):
    """Heatmaps (one per loss type, shared colour scale) of w_{i,t} for sequences of the given
    lengths: GRPO gives each *sequence* weight 1/B, spread over its tokens; the others give
    every token the same weight."""
    mask = lengths_to_mask(lengths, max_completion_length)  # [B, T]
    W = [token_weights(mask, lt, max_completion_length) for lt in loss_types]  # [B, T] each
    zmax = float(max(w.max() for w in W))
    fig = make_subplots(rows=1, cols=len(W), subplot_titles=list(loss_types), shared_yaxes=True)
    for j, w in enumerate(W, start=1):
        z = w.masked_fill(mask == 0, float("nan"))  # padding left blank
        fig.add_heatmap(
            z=z.numpy(),
            zmin=0,
            zmax=zmax,
            coloraxis="coloraxis",
            row=1,
            col=j,
            hovertemplate="seq %{y}, token %{x}: w = %{z:.4f}<extra></extra>",
        )
    fig.update_yaxes(
        title_text="sequence (length)",
        autorange="reversed",
        row=1,
        col=1,
        tickvals=list(range(len(mask))),
        ticktext=[f"{i} ({int(n)})" for i, n in enumerate(mask.sum(-1))],
    )
    fig.update_xaxes(title_text="token t")
    fig.update_layout(title="Weight of each token's loss", coloraxis={"colorscale": "Viridis"})
    return fig


def length_bias_table(
    lengths, advantages, loss_types=LOSS_TYPES_SHOWN, max_completion_length=None
) -> pd.DataFrame:
    """Per sequence and loss type, at ratio 1: the push on each of its tokens' log-probs,
    -dL/d log pi_t = w_t A, and on the whole sequence, sum_t w_t A.

    Under GRPO a wrong answer (A < 0) of length |o| gets -|A| / (B |o|) per token: ten times
    longer, ten times less push-down per token, so long wrong answers are discouraged less
    (Dr. GRPO 2503.20783, section 3.1). With dr_grpo/bnpo/dapo every token gets the same push.

    >>> t = length_bias_table([5, 50], [-1.0, -1.0], ["grpo", "dr_grpo"])
    >>> t["per-token push grpo"].tolist(), t["per-token push dr_grpo"].tolist()
    ([-0.1, -0.01], [-0.01, -0.01])
    """
    mask = lengths_to_mask(lengths, max_completion_length)  # [B, T]
    A = torch.as_tensor(advantages, dtype=torch.float32)  # [B]
    out = {"length": [int(n) for n in lengths], "advantage": A.tolist()}
    for lt in loss_types:
        w = token_weights(mask, lt, max_completion_length)  # [B, T]
        out[f"per-token push {lt}"] = (w.amax(-1) * A).tolist()
        out[f"sequence push {lt}"] = ((w * mask).sum(-1) * A).tolist()
    return pd.DataFrame(out).round(6)


def length_bias_figure(
    lengths, advantages, loss_types=LOSS_TYPES_SHOWN, max_completion_length=None
) -> go.Figure:
    """Bars of the per-token push w_t A for each sequence, one group per loss type."""
    df = length_bias_table(lengths, advantages, loss_types, max_completion_length)
    x = [f"|o|={n}, A={a:+g}" for n, a in zip(df["length"], df["advantage"])]
    fig = go.Figure()
    for lt in loss_types:
        fig.add_bar(x=x, y=df[f"per-token push {lt}"], name=lt)
    fig.update_layout(
        title="Push on each token's log-prob, w_t · A (ratio 1)",
        yaxis_title="w_t · A",
        barmode="group",
    )
    return fig
