"""Figures of one step of a run: advantages (per step, per scheme), per-token diagnostics of one
completion (advantage, ratio, clipped, k1/k2/k3), token weights per loss type.

They read ``run.samples`` (one row per completion) and ``run.tokens`` (per-token lists of the
first ``diagnostics`` completions of each step), and reuse the builders of the core labs
(:mod:`labkit.plots.advantages`, :mod:`labkit.plots.aggregation`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from labkit.plots.advantages import advantage_table, scheme_bars
from labkit.plots.aggregation import LOSS_TYPES_SHOWN, token_weights_figure
from labkit.plots.training import strided_steps

HEATMAP_ROWS = ("advantage", "ratio", "clipped", "k1", "k2", "k3")


def _step(frame: pd.DataFrame, step: int | None) -> tuple[int, pd.DataFrame]:
    if not len(frame):
        raise ValueError("the run has no rows yet: train at least one step first")
    step = int(frame["step"].max()) if step is None else int(step)
    rows = frame[frame["step"] == step]
    if not len(rows):
        raise ValueError(
            f"step={step} is not in the run: use one of "
            f"{int(frame['step'].min())}..{int(frame['step'].max())}"
        )
    return step, rows


def advantage_slider(run, max_steps_shown: int = 40, bins: int = 30) -> go.Figure:
    """Histogram of the advantages of one step, with a slider over steps (one trace per step,
    the slider shows one at a time). The spike at 0 is the zero-spread groups."""
    s = run.samples
    fig = go.Figure()
    steps = strided_steps(s, max_steps_shown)
    lo, hi = (float(s["advantage"].min()), float(s["advantage"].max())) if steps else (-1, 1)
    size = max((hi - lo) / bins, 1e-3)
    for i, st in enumerate(steps):
        fig.add_histogram(
            x=s.loc[s["step"] == st, "advantage"],
            name=f"step {st}",
            visible=i == len(steps) - 1,
            xbins={"start": lo - size / 2, "end": hi + size, "size": size},
        )
    slider_steps = [
        {
            "label": str(st),
            "method": "update",
            "args": [{"visible": [j == i for j in range(len(steps))]}],
        }
        for i, st in enumerate(steps)
    ]
    fig.update_layout(
        title="Advantage distribution of one step",
        xaxis_title="advantage",
        yaxis_title="completions",
        showlegend=False,
        sliders=[
            {"active": len(steps) - 1, "steps": slider_steps, "currentvalue": {"prefix": "step "}}
        ]
        if steps
        else [],
    )
    return fig


def step_advantage_table(run, step: int | None = None) -> pd.DataFrame:
    """The rewards of one step under every advantage scheme (group z-score n-1 and population,
    batch scaling, unscaled r - mean, RLOO), via :func:`labkit.plots.advantages.advantage_table`.
    """
    step, rows = _step(run.samples, step)
    G = int(rows.groupby("group").size().iloc[0])
    table = advantage_table(rows["reward"].astype(float).tolist(), G)
    table.insert(0, "completion", rows["completion"].to_numpy())
    table.attrs["step"], table.attrs["G"] = step, G
    return table


def advantage_schemes(run, step: int | None = None, groups: int = 4) -> go.Figure:
    """Grouped bars: the first ``groups`` groups of a step, each completion's advantage under
    each scheme (computed on the whole step, so batch scaling sees the whole batch)."""
    table = step_advantage_table(run, step)
    G = table.attrs["G"]
    shown = table[table["group"] < groups]
    fig = scheme_bars(shown, list(table.columns[3:]), G)
    fig.update_layout(
        title=f"Step {table.attrs['step']}: the same rewards, five advantage schemes (G = {G})"
    )
    return fig


def token_row(run, step: int | None = None, sample: int = 0) -> pd.Series:
    """The per-token record of completion ``sample`` of ``step`` (from ``run.tokens``)."""
    step, rows = _step(run.tokens, step)
    hit = rows[rows["sample"] == sample]
    if not len(hit):
        raise ValueError(
            f"sample={sample} has no token record at step {step}: use one of "
            f"{sorted(rows['sample'].tolist())} (set diagnostics= in the config)"
        )
    return hit.iloc[0]


def token_heatmap(run, step: int | None = None, sample: int = 0) -> go.Figure:
    """One completion, token by token: advantage, ratio pi/pi_old, clipped?, k1, k2, k3.

    The advantage row is the sequence's advantage on every token (GRPO), or PPO's per-token GAE
    advantage (``advantage_t``) when the row has it.

    Colours are scaled per row (each row's largest |value| is full colour); the cell text is the
    value itself.
    """
    r = token_row(run, step, sample)
    names = [n for n in HEATMAP_ROWS if n == "advantage" or isinstance(r.get(n), list)]
    T = len(r["tokens"])
    adv = r.get("advantage_t")  # PPO: GAE per token; GRPO: one advantage for every token
    adv = adv if isinstance(adv, list) else [r["advantage"]] * T
    vals = np.array(
        [adv if n == "advantage" else [np.nan if v is None else v for v in r[n]] for n in names],
        dtype=float,
    )
    centre = np.where(np.array(names)[:, None] == "ratio", 1.0, 0.0)  # ratio's neutral is 1
    dev = vals - centre
    scale = np.nanmax(np.abs(dev), axis=1, keepdims=True)
    z = np.where(scale > 0, dev / np.where(scale > 0, scale, 1), 0.0)
    text = [[f"{v:.3g}" for v in row] for row in vals]
    x = [f"{t}<br>{i}" for i, t in enumerate(r["tokens"])]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=x,
            y=names,
            text=text,
            texttemplate="%{text}",
            colorscale="RdBu",
            zmid=0,
            zmin=-1,
            zmax=1,
            showscale=False,
            hovertemplate="%{y} at %{x}: %{text}<extra></extra>",
        )
    )
    fig.update_layout(
        title=f"Step {int(r['step'])}, completion {sample}: {r['prompt']}{''.join(r['tokens'])}",
        yaxis={"autorange": "reversed"},
        xaxis_title="token (position)",
    )
    return fig


def kl_tokens(run, step: int | None = None, sample: int = 0) -> go.Figure:
    """k1, k2, k3 of KL(pi || pi_ref) token by token on the same sampled tokens of one
    completion. The exact per-token KL needs the full next-token distributions, which the run
    log does not keep; :class:`labkit.widgets.KLExplorer` compares with exact values."""
    r = token_row(run, step, sample)
    fig = go.Figure()
    for k in ("k1", "k2", "k3"):
        if isinstance(r.get(k), list):
            fig.add_scatter(
                x=list(range(len(r["tokens"]))),
                y=r[k],
                name=k,
                mode="lines+markers",
                text=r["tokens"],
            )
    fig.update_layout(
        title=f"Per-token KL estimates, step {int(r['step'])}, completion {sample}",
        xaxis_title="token position",
        yaxis_title="nats",
    )
    return fig


def step_token_weights(
    run, step: int | None = None, n: int = 8, loss_types=LOSS_TYPES_SHOWN
) -> go.Figure:
    """Token weights w_{i,t} of each loss type for the first ``n`` completions of a step (their
    real lengths), via :func:`labkit.plots.aggregation.token_weights_figure`."""
    step, rows = _step(run.samples, step)
    fig = token_weights_figure(rows["length"].tolist()[:n], loss_types)
    fig.update_layout(title=f"Weight of each token's loss, step {step} (first {n} completions)")
    return fig
