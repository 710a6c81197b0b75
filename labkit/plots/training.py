"""Figures of a training run over its steps, built from its RunLog (dashboards, reports, tests).

Every builder takes a :class:`labkit.RunLog` (or anything with ``.metrics``/``.samples``/
``.events`` DataFrames) and returns a ``plotly.graph_objects.Figure``. Changes made during the run
(``run.events``: a new reward function, beta, ...) are drawn as labelled vertical lines, so a
jump in a curve can be read against what was changed. Missing metrics are skipped, not faked.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

EVENT_COLOR = "rgba(120,120,120,0.8)"


def _frame(run, kind: str) -> pd.DataFrame:
    if isinstance(run, pd.DataFrame):
        return run if kind == "metrics" else pd.DataFrame()
    return getattr(run, kind, pd.DataFrame())


def _xy(m: pd.DataFrame, col: str, smooth: int = 1):
    """(step, value) arrays of one metric, ``smooth`` > 1 a trailing moving mean, NaN/None as
    None so the JSON stays strict."""
    y = pd.to_numeric(m[col], errors="coerce")
    y = (y.rolling(smooth, min_periods=1).mean() if smooth > 1 else y).to_numpy(dtype=float)
    return m["step"].to_numpy(), np.where(np.isfinite(y), y, None)


def event_label(row: dict) -> str:
    """Short text for one event row: ``beta=0.1, reward_funcs=['mine']``.

    >>> event_label({"step": 3, "kind": "update", "beta": 0.1})
    'beta=0.1'
    """
    parts = [
        f"{k}={v}"
        for k, v in row.items()
        if k not in ("step", "kind")
        and v is not None
        and not (isinstance(v, float) and np.isnan(v))
    ]
    return ", ".join(parts) or str(row.get("kind", "event"))


def mark_events(fig: go.Figure, run, **where) -> go.Figure:
    """Draw each of ``run.events`` as a dotted vertical line at step + 0.5 (the change took
    effect between that step and the next), labelled with what changed. ``where``: row/col."""
    ev = _frame(run, "events")
    for row in ev.to_dict("records") if len(ev) else []:
        fig.add_vline(
            x=row["step"] + 0.5,
            line={"dash": "dot", "color": EVENT_COLOR},
            annotation={"text": event_label(row), "textangle": -90, "font": {"size": 9}},
            **where,
        )
    return fig


def _curves(run, cols: dict, title: str, yaxis: str) -> go.Figure:
    m = _frame(run, "metrics")
    fig = go.Figure()
    for col, style in cols.items():
        if col in m:
            x, y = _xy(m, col)
            fig.add_scatter(x=x, y=y, mode="lines", **style)
    fig.update_layout(title=title, xaxis_title="step", yaxis_title=yaxis)
    return mark_events(fig, run)


def reward_columns(m: pd.DataFrame) -> list[str]:
    """Per-function reward means in a metrics frame (``rewards/<fn>/mean``)."""
    return [c for c in m.columns if c.startswith("rewards/") and c.endswith("/mean")]


def reward_curve(run) -> go.Figure:
    """Mean reward per step (total and per reward function) and the fraction correct."""
    m = _frame(run, "metrics")
    cols = {"reward/mean": {"name": "reward (total)"}}
    cols.update({c: {"name": c.split("/")[1], "line": {"dash": "dot"}} for c in reward_columns(m)})
    cols["accuracy"] = {"name": "accuracy (train samples)"}
    fig = _curves(run, cols, "Reward over steps", "reward")
    if len(m) >= 10:  # one step's mean is noisy: a trailing mean shows the trend
        fig.add_scatter(
            x=m["step"].to_numpy(),
            y=m["reward/mean"].rolling(10, min_periods=1).mean().to_numpy(),
            name="reward (mean of last 10 steps)",
            mode="lines",
            line={"width": 3, "color": "black"},
        )
    return fig


def kl_curve(run) -> go.Figure:
    """k1, k2, k3 estimates of KL(pi || pi_ref) per token, mean per step (same samples)."""
    cols = {f"kl/{k}": {"name": k} for k in ("k1", "k2", "k3")}
    return _curves(
        run, cols, "KL to the reference policy (same samples, three estimators)", "nats/token"
    )


def clip_curve(run) -> go.Figure:
    """Fraction of tokens whose ratio was clipped below (A < 0), above (A > 0), either."""
    cols = {
        "clip/ratio_low": {"name": "clipped low"},
        "clip/ratio_high": {"name": "clipped high"},
        "clip/region": {"name": "either", "line": {"dash": "dot"}},
    }
    return _curves(run, cols, "Clip fractions", "fraction of tokens")


def entropy_curve(run) -> go.Figure:
    """Mean token entropy of the policy on its own completions: a collapse warns of no
    exploration left."""
    return _curves(run, {"entropy": {"name": "entropy"}}, "Policy entropy", "nats/token")


def length_curve(run) -> go.Figure:
    """Response length over steps: mean, correct, incorrect; truncation rate on the right axis."""
    m = _frame(run, "metrics")
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    for col, name in [
        ("len/mean", "all"),
        ("len/correct", "correct"),
        ("len/incorrect", "incorrect"),
    ]:
        if col in m:
            x, y = _xy(m, col)
            fig.add_scatter(x=x, y=y, name=name, mode="lines")
    if "len/truncated_frac" in m:
        x, y = _xy(m, "len/truncated_frac")
        fig.add_scatter(
            x=x,
            y=y,
            name="truncated fraction",
            mode="lines",
            line={"dash": "dot"},
            secondary_y=True,
        )
    fig.update_layout(title="Response length over steps", xaxis_title="step")
    fig.update_yaxes(title_text="tokens", secondary_y=False)
    fig.update_yaxes(title_text="truncated", range=[0, 1], secondary_y=True)
    return mark_events(fig, run)


def length_distribution(run, max_steps_shown: int = 30) -> go.Figure:
    """Length drift: box plots of completion lengths per step, correct vs incorrect side by side
    (Dr. GRPO: under GRPO's 1/|o| the wrong answers grow longer)."""
    shown = _strided_samples(run, max_steps_shown)
    fig = go.Figure()
    if len(shown):
        for ok, name in ((True, "correct"), (False, "incorrect")):
            part = shown[shown["correct"] == ok]
            fig.add_box(x=part["step"], y=part["length"], name=name, boxpoints=False)
    fig.update_layout(
        title="Length distribution over steps",
        xaxis_title="step",
        yaxis_title="tokens",
        boxmode="group",
    )
    return mark_events(fig, run)


def strided_steps(s: pd.DataFrame, n: int) -> list:
    """About ``n`` of the steps of ``s``, evenly strided, the last one always among them."""
    steps = sorted(s["step"].unique()) if len(s) else []
    return list(dict.fromkeys(steps[:: max(1, len(steps) // n)] + steps[-1:]))


def _strided_samples(run, n: int) -> pd.DataFrame:
    s = _frame(run, "samples")
    return s[s["step"].isin(strided_steps(s, n))] if len(s) else s


def advantage_distribution(run, max_steps_shown: int = 30) -> go.Figure:
    """Box plot of the advantages of every completion, for up to ``max_steps_shown`` steps.

    Zero-spread groups show up as a spike at 0: they carry no learning signal.
    """
    shown = _strided_samples(run, max_steps_shown)
    fig = go.Figure()
    if len(shown):
        fig.add_box(x=shown["step"], y=shown["advantage"], name="advantage", boxpoints=False)
    fig.update_layout(
        title="Advantage distribution per step", xaxis_title="step", yaxis_title="advantage"
    )
    return mark_events(fig, run)


def loss_zero_panel(run) -> go.Figure:
    """ "Why is my loss zero?": the loss beside the gradient norm and the fraction of groups with
    zero reward spread. All-equal rewards in a group give A = 0 for every member (DAPO's
    dynamic sampling drops such groups), so when that fraction reaches 1 the policy term and its
    gradient vanish whatever the loss type; a non-zero grad norm with a ~0 loss is normal (the
    clipped surrogate's value is ~0 at ratio 1 while its gradient is not)."""
    m = _frame(run, "metrics")
    fig = make_subplots(
        rows=3,
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.06,
        subplot_titles=(
            "loss (policy + KL)",
            "gradient norm",
            "fraction of groups with zero reward spread",
        ),
    )
    for i, (col, name) in enumerate(
        [("loss", "loss"), ("grad_norm", "grad norm"), ("adv/frac_zero_std", "zero-spread groups")],
        start=1,
    ):
        if col in m:
            x, y = _xy(m, col)
            fig.add_scatter(x=x, y=y, name=name, mode="lines", row=i, col=1)
    fig.update_yaxes(range=[0, 1.02], row=3, col=1)
    fig.update_xaxes(title_text="step", row=3, col=1)
    fig.update_layout(title="Why is my loss zero?", height=600, showlegend=False)
    return mark_events(fig, run, row="all", col=1)
