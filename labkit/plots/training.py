"""Figures of a training run, built from its RunLog (live dashboards, reports, tests)."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots


def _metrics(run):
    return run.metrics if hasattr(run, "metrics") else run


def reward_curve(run) -> go.Figure:
    """Mean reward per step (total and per reward function) and the fraction correct."""
    m = _metrics(run)
    fig = go.Figure()
    if len(m):
        fig.add_scatter(x=m["step"], y=m["reward/mean"], name="reward (total)", mode="lines")
        for col in [c for c in m.columns if c.startswith("rewards/") and c.endswith("/mean")]:
            fig.add_scatter(x=m["step"], y=m[col], name=col.split("/")[1], mode="lines",
                            line={"dash": "dot"})
        if "accuracy" in m:
            fig.add_scatter(x=m["step"], y=m["accuracy"], name="accuracy (train samples)",
                            mode="lines")
    fig.update_layout(title="Reward over steps", xaxis_title="step", yaxis_title="reward")
    return fig


def advantage_distribution(run, max_steps_shown: int = 30) -> go.Figure:
    """Box plot of the advantages of every completion, for up to ``max_steps_shown`` steps.

    Zero-spread groups show up as a spike at 0: they carry no learning signal.
    """
    s = run.samples
    fig = go.Figure()
    if len(s):
        steps = sorted(s["step"].unique())
        stride = max(1, len(steps) // max_steps_shown)
        shown = s[s["step"].isin(steps[::stride])]
        fig.add_box(x=shown["step"], y=shown["advantage"], name="advantage", boxpoints=False)
    fig.update_layout(title="Advantage distribution per step", xaxis_title="step",
                      yaxis_title="advantage")
    return fig


def length_curve(run) -> go.Figure:
    """Response length over steps: mean, correct, incorrect; truncation rate on the right axis."""
    m = _metrics(run)
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    if len(m):
        for col, name in [("len/mean", "all"), ("len/correct", "correct"),
                          ("len/incorrect", "incorrect")]:
            fig.add_scatter(x=m["step"], y=m[col], name=name, mode="lines")
        fig.add_scatter(x=m["step"], y=m["len/truncated_frac"], name="truncated fraction",
                        mode="lines", line={"dash": "dot"}, secondary_y=True)
    fig.update_layout(title="Response length over steps", xaxis_title="step")
    fig.update_yaxes(title_text="tokens", secondary_y=False)
    fig.update_yaxes(title_text="truncated", range=[0, 1], secondary_y=True)
    return fig


def kl_curve(run) -> go.Figure:
    """k1, k2, k3 estimates of KL(pi || pi_ref) per step (when a reference was kept)."""
    m = _metrics(run)
    fig = go.Figure()
    for k in ("kl/k1", "kl/k2", "kl/k3"):
        if k in m:
            fig.add_scatter(x=m["step"], y=m[k], name=k.split("/")[1], mode="lines")
    fig.update_layout(title="KL to the reference policy", xaxis_title="step", yaxis_title="nats/token")
    return fig
