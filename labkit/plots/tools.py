"""Figures of lab 60 (tools and turns): who wrote each token of an episode and what the loss
gives it; the tool-call rate per difficulty before and after RL; turns per episode.

They read the run log (``run.tokens``: per-token rows with ``env_mask``, ``loss_mask`` and
``weight``; ``run.metrics``) or :func:`labkit.experiments.tools.level_table` of a result.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from labkit.plots.run_step import token_row

WRITERS = {"policy": "#1f77b4", "environment": "#bbbbbb", "masked": "#d62728"}
"""Colour of a token by who wrote it: the policy (counted by the loss), the environment (never
counted) or the policy but masked (e.g. a truncated episode under mask_truncated_completions)."""


def writers(row) -> list[str]:
    """ "policy", "environment" or "masked" per token of a per-token row.

    >>> writers({"env_mask": [True, False, True], "loss_mask": [1.0, 0.0, 0.0]})
    ['policy', 'environment', 'masked']
    """
    return [
        "environment" if not e else ("policy" if m > 0 else "masked")
        for e, m in zip(row["env_mask"], row["loss_mask"])
    ]


def tool_sample(run, step: int | None = None) -> int:
    """The first episode of ``step`` (default: the last) with a token per-token rows hold that
    the environment wrote (0 when none has one)."""
    t = run.tokens
    step = int(t["step"].max()) if step is None else step
    rows = t[t["step"] == step]
    hits = [int(s) for s, e in zip(rows["sample"], rows["env_mask"]) if not all(e)]
    return hits[0] if hits else 0


def episode_tokens(run, step: int | None = None, sample: int | None = None) -> go.Figure:
    """One episode token by token: bars of the weight w_{i,t} each token gets in the loss,
    coloured by writer, and the advantage A_i times the weight (the token's share of the
    policy gradient's scale). Environment tokens get weight 0: no gradient, no KL.
    ``sample=None``: the first episode with a tool call (:func:`tool_sample`)."""
    sample = tool_sample(run, step) if sample is None else sample
    r = token_row(run, step, sample)
    who = writers(r)
    x = [f"{i}:{t if t.strip() else repr(t)}" for i, t in enumerate(r["tokens"])]
    fig = go.Figure()
    for name, colour in WRITERS.items():
        idx = [i for i, w in enumerate(who) if w == name]
        fig.add_bar(
            x=[x[i] for i in idx],
            y=[r["weight"][i] for i in idx],
            name=name,
            marker_color=colour,
            customdata=[[r["advantage"] * r["weight"][i]] for i in idx],
            hovertemplate="%{x}: weight %{y:.4f}, A x w %{customdata[0]:.4f}"
            "<extra>" + name + "</extra>",
        )
    fig.update_layout(
        title=f"Step {int(r['step'])}, episode {sample} (A = {r['advantage']:.3f}):"
        f" {r['prompt']}{''.join(r['tokens'])}",
        xaxis={"categoryorder": "array", "categoryarray": x, "title": "token (position: text)"},
        yaxis_title="weight w_{i,t} in the loss",
        barmode="overlay",
    )
    return fig


def episode_table(run, step: int | None = None, sample: int | None = None) -> pd.DataFrame:
    """The per-token record of one episode: token, writer, weight, advantage x weight."""
    r = token_row(run, step, tool_sample(run, step) if sample is None else sample)
    return pd.DataFrame(
        {
            "token": r["tokens"],
            "writer": writers(r),
            "weight": r["weight"],
            "A x w": [r["advantage"] * w for w in r["weight"]],
        }
    )


def call_rate_by_level(table: pd.DataFrame) -> go.Figure:
    """Grouped bars: tool-call rate and accuracy per level, before and after RL (rows of
    ``table`` indexed by ``(phase, level)`` with columns ``call_rate``, ``accuracy`` and,
    over seeds, the half-widths of their 95 % intervals ``± call_rate``, ``± accuracy``).

    >>> t = pd.DataFrame({"phase": ["before", "after"], "level": ["easy"] * 2,
    ...                   "call_rate": [.5, .3], "accuracy": [.4, .7]}).set_index(["phase", "level"])
    >>> len(call_rate_by_level(t).data)
    4
    """
    fig = go.Figure()
    for (phase, col), dash in zip(
        [(p, c) for c in ("call_rate", "accuracy") for p in ("before", "after")], ["", "", "x", "x"]
    ):
        rows = table.loc[phase]
        half = rows.get(f"± {col}")
        fig.add_bar(
            x=list(rows.index),
            y=rows[col],
            name=f"{col} {phase}",
            marker_pattern_shape=dash,
            error_y=None if half is None else {"type": "data", "array": list(half)},
        )
    fig.update_layout(
        title="Calculator: when does the policy call the tool? (mean over seeds, 95 % CI)",
        xaxis_title="difficulty",
        yaxis_title="fraction",
        barmode="group",
    )
    return fig
