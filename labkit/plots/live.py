"""The dashboard's one figure: six panels of per-step metrics, as a layout plus pure functions
that turn metric rows and events into trace data and shapes.

The widget (``labkit.widgets.dashboard``) wraps :func:`live_figure` in one ``go.FigureWidget``
and writes :func:`live_series` into it inside ``batch_update()``; a static copy of the same
figure (:func:`live_figure` with rows) goes into reports and tests.
"""

from __future__ import annotations

import math

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from labkit.plots.training import event_label

# panel -> [(metric key, trace name)]; per reward function traces are added to panel 0.
PANELS = [
    ("reward", [("reward/mean", "reward (total)"), ("accuracy", "accuracy")]),
    ("KL to reference (per token)", [("kl/k1", "k1"), ("kl/k2", "k2"), ("kl/k3", "k3")]),
    (
        "length (tokens)",
        [
            ("len/mean", "len all"),
            ("len/correct", "len correct"),
            ("len/incorrect", "len incorrect"),
        ],
    ),
    (
        "why is my loss zero?",
        [("loss", "loss"), ("grad_norm", "grad norm"), ("adv/frac_zero_std", "zero-spread groups")],
    ),
    ("clip fractions", [("clip/ratio_low", "clipped low"), ("clip/ratio_high", "clipped high")]),
    ("entropy, truncation", [("entropy", "entropy"), ("len/truncated_frac", "truncated")]),
]
ROWS, COLS = 2, 3
TOOL_TRACES = [
    (0, "reward/per_turn", "reward per turn"),
    (2, "turns/mean", "turns"),
    (5, "tools/call_rate", "tool calls"),
    (5, "tools/failure_rate", "tool failures"),
]
"""Multi-turn runs (``labkit.algos.multiturn``): traces shown when the log has the key."""


def reward_keys(rows: list[dict]) -> list[str]:
    """``rewards/<fn>/mean`` keys in order of first appearance (reward swaps add new ones).

    >>> reward_keys([{"rewards/a/mean": 1}, {"rewards/b/mean": 0, "rewards/a/mean": 1}])
    ['rewards/a/mean', 'rewards/b/mean']
    """
    keys = {}
    for r in rows:
        for k in r:
            if k.startswith("rewards/") and k.endswith("/mean"):
                keys[k] = None
    return list(keys)


def trace_keys(rows: list[dict]) -> list[tuple[int, str, str]]:
    """(panel index, metric key, trace name) of every trace, in the figure's order."""
    out = [(p, key, name) for p, (_, traces) in enumerate(PANELS) for key, name in traces]
    tools = [t for t in TOOL_TRACES if rows and t[1] in rows[0]]  # before rewards: swaps append
    return out + tools + [(0, k, k.split("/")[1]) for k in reward_keys(rows)]


def _num(v):
    return v if isinstance(v, (int, float)) and math.isfinite(v) else None


def live_series(rows: list[dict]) -> list[tuple[list, list]]:
    """(steps, values) for each trace of :func:`trace_keys`; missing or NaN values are None
    (plotly draws a gap; strict JSON for the widget).

    >>> live_series([{"step": 1, "reward/mean": 0.5}])[0]
    ([1], [0.5])
    """
    steps = [r["step"] for r in rows]
    return [(steps, [_num(r.get(key)) for r in rows]) for _, key, _ in trace_keys(rows)]


def event_shapes(events: list[dict]) -> tuple[list[dict], list[dict]]:
    """Vertical dotted lines (one per event, in every panel) at step + 0.5, and one label each
    on the first panel: (shapes, annotations) for ``fig.layout``."""
    shapes, notes = [], []
    for e in events:
        x = e["step"] + 0.5
        for i in range(ROWS * COLS):
            ax = "" if i == 0 else str(i + 1)
            shapes.append(
                {
                    "type": "line",
                    "x0": x,
                    "x1": x,
                    "xref": f"x{ax}",
                    "y0": 0,
                    "y1": 1,
                    "yref": f"y{ax} domain",
                    "line": {"dash": "dot", "width": 1, "color": "gray"},
                }
            )
        notes.append(
            {
                "x": x,
                "xref": "x",
                "y": 1,
                "yref": "y domain",
                "text": event_label(e),
                "showarrow": False,
                "textangle": -90,
                "xanchor": "right",
                "yanchor": "top",
                "font": {"size": 9, "color": "gray"},
            }
        )
    return shapes, notes


def live_figure(rows: list[dict] = (), events: list[dict] = ()) -> go.Figure:
    """The six-panel figure of the dashboard, filled with ``rows`` (metric dicts) and
    ``events`` (the run log's event rows)."""
    rows = list(rows)
    fig = make_subplots(
        rows=ROWS,
        cols=COLS,
        subplot_titles=[t for t, _ in PANELS],
        horizontal_spacing=0.07,
        vertical_spacing=0.14,
    )
    for (p, _, name), (x, y) in zip(trace_keys(rows), live_series(rows)):
        dash = "dot" if p == 0 and name not in ("reward (total)", "accuracy") else None
        fig.add_scatter(
            x=x,
            y=y,
            name=name,
            mode="lines",
            line={"dash": dash},
            row=p // COLS + 1,
            col=p % COLS + 1,
        )
    shapes, notes = event_shapes(list(events))
    fig.update_layout(
        height=600,
        margin={"t": 40, "b": 110, "l": 40, "r": 10},
        legend={"orientation": "h", "y": -0.14, "yanchor": "top"},
        shapes=shapes,
        annotations=list(fig.layout.annotations) + notes,
    )
    fig.update_xaxes(title_text="step", row=2)
    return fig
