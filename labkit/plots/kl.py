"""Figures for the KL-estimator lab: Schulman's table, estimator curves and gradients, and the
KL-in-reward vs KL-as-loss bandit."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from labkit.core.kl import LOG_RATIO_MAX, kl_k1, kl_k2, kl_k3

COLORS = {"k1": "#636efa", "k2": "#ef553b", "k3": "#00cc96"}


def schulman_table_figure(df: pd.DataFrame) -> go.Figure:
    """labkit's Monte Carlo (+- one standard error) next to the closed forms and Schulman's
    published numbers; ``df`` from :func:`labkit.kl_table.schulman_table`."""

    def pm(col):
        return [f"{v:.4f} ± {s:.4f}" for v, s in zip(df[col], df[col + " se"])]

    def fmt(col):
        return ["" if pd.isna(v) else f"{v:.4g}" for v in df[col]]

    header = [
        "mu",
        "estimator",
        "bias/KL (MC)",
        "closed form",
        "published",
        "std/KL (MC)",
        "closed form",
        "published",
    ]
    cells = [
        df["mu"],
        df["estimator"],
        pm("bias/KL"),
        fmt("bias/KL closed"),
        fmt("bias/KL published"),
        pm("std/KL"),
        fmt("std/KL closed"),
        fmt("std/KL published"),
    ]
    fig = go.Figure(go.Table(header={"values": header}, cells={"values": cells}))
    fig.update_layout(title="Schulman's KL table: q = N(0,1), p = N(mu,1), KL = mu²/2")
    return fig


def std_over_kl_figure(df: pd.DataFrame) -> go.Figure:
    """std/KL against mu (log-log): Monte-Carlo points with error bars, closed forms as lines."""
    fig = go.Figure()
    for name, g in df.groupby("estimator"):
        c = COLORS.get(name)
        fig.add_scatter(
            x=g["mu"],
            y=g["std/KL closed"],
            mode="lines",
            name=f"{name} closed form",
            line={"color": c},
        )
        fig.add_scatter(
            x=g["mu"],
            y=g["std/KL"],
            mode="markers",
            name=f"{name} Monte Carlo",
            marker={"color": c},
            error_y={"array": 2 * g["std/KL se"]},
        )
    fig.update_layout(
        title="Relative standard deviation of each estimator (lower is better)",
        xaxis={"title": "mu", "type": "log"},
        yaxis={"title": "std / KL", "type": "log"},
    )
    return fig


def estimator_curves(lo: float = -4.0, hi: float = 4.0, n: int = 401) -> go.Figure:
    """Each estimator and its gradient d k / d log pi_theta as a function of log r.

    log r = log pi_ref - log pi_theta of a sampled token. d k1 = 1 (a constant: zero in mean),
    d k2 = -log r, d k3 = 1 - r, which grows like e^{log r}.
    """
    log_r = torch.linspace(lo, hi, n, dtype=torch.float64)  # [N]
    logp = (-log_r).requires_grad_()  # [N]: log pi_theta with log pi_ref = 0
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=("value k(log r)", "gradient d k / d log pi")
    )
    for name, fn in (("k1", kl_k1), ("k2", kl_k2), ("k3", kl_k3)):
        k = fn(logp, torch.zeros_like(logp))  # [N]
        (g,) = torch.autograd.grad(k.sum(), logp)
        style = {"color": COLORS[name]}
        fig.add_scatter(x=log_r.numpy(), y=k.detach().numpy(), name=name, line=style, row=1, col=1)
        fig.add_scatter(
            x=log_r.numpy(),
            y=g.numpy(),
            name=f"d{name}",
            line={**style, "dash": "dot"},
            row=1,
            col=2,
            showlegend=False,
        )
    fig.update_xaxes(title_text="log r = log pi_ref - log pi_theta")
    fig.update_layout(title="KL estimators per sampled token")
    return fig


def k3_large_ratio_figure(hi: float = 120.0, n: int = 481) -> go.Figure:
    """k3 at large log r on a log axis: exact (float64), naive float32 (exp overflows to inf at
    log r ~ 88.7, drawn as a gap) and labkit's (exp sees at most LOG_RATIO_MAX: dotted line)."""
    log_r = torch.linspace(0.0, hi, n, dtype=torch.float64)  # [N]
    exact = log_r.exp() - 1 - log_r  # [N]
    r32 = log_r.float()
    naive = (r32.exp() - 1 - r32).double()  # [N], inf past 88.7
    ours = kl_k3(-log_r.float(), torch.zeros(n)).double()  # [N]
    fig = go.Figure()
    x = log_r.numpy()
    fig.add_scatter(x=x, y=exact.numpy(), name="exact k3 (float64)", line={"color": "black"})
    fig.add_scatter(
        x=x,
        y=naive.where(naive.isfinite(), torch.nan).numpy(),
        name="naive float32",
        line={"dash": "dash"},
    )
    fig.add_scatter(x=x, y=ours.numpy(), name="labkit kl_k3 (float32, clamped)", line={"width": 3})
    fig.add_vline(
        x=LOG_RATIO_MAX,
        line_dash="dot",
        line_color="gray",
        annotation_text=f"clamp: log r = {LOG_RATIO_MAX:g}",
    )
    fig.update_layout(
        title="k3 = r - 1 - log r explodes like e^{log r}",
        xaxis_title="log r = log pi_ref - log pi_theta",
        yaxis={"title": "k3", "type": "log"},
    )
    return fig


def kl_bandit_figure(df: pd.DataFrame) -> go.Figure:
    """Final policy of each way of using the KL (bars) against pi_ref and the optimum pi*
    (lines); ``df`` from :func:`labkit.kl_table.kl_bandit`."""
    fig = go.Figure()
    uses = [c for c in df.columns if c not in ("action", "r", "pi_ref", "pi*")]
    for use in uses:
        fig.add_bar(x=df["action"], y=df[use], name=use)
    fig.add_scatter(
        x=df["action"],
        y=df["pi*"],
        name="pi* = pi_ref e^{r/beta} / Z",
        mode="lines+markers",
        line={"color": "black", "width": 3},
    )
    fig.add_scatter(
        x=df["action"],
        y=df["pi_ref"],
        name="pi_ref",
        mode="lines+markers",
        line={"color": "gray", "dash": "dash"},
    )
    fig.update_layout(
        title="maximise E[r] - beta KL(pi || pi_ref): where each KL use ends",
        xaxis_title="action (reward shown in the table)",
        yaxis_title="probability",
        barmode="group",
    )
    return fig
