"""The dashboard's one figure: six panels of per-step metrics, as a layout plus pure functions
that turn metric rows, events and the run doctor's findings into trace data and annotations.

Read at a glance: each panel has its own legend (plotly's numbered legends, one per panel), each
quantity its own colour in every panel and every run (:data:`QUANTITIES`; a reward function's
colour comes from its name), each title says what is drawn and in which unit, hovering a line
gives its name, the step and the value. The run doctor's warnings sit in the corner of the
panel whose metric they are about (:func:`doctor_notes`).

The widget (``labkit.widgets.live.LiveFigure``) wraps :func:`live_figure` in one ``go.FigureWidget``
and writes :func:`live_series` into it inside ``batch_update()``; a static copy of the same
figure (:func:`live_figure` with rows) goes into reports and tests.
"""

from __future__ import annotations

import html
import math
import zlib

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from labkit.plots.training import event_label

# metric key -> (legend label, unit shown on hover, colour). One colour per quantity, the same
# in every panel and run; "correct" is green and "incorrect" red wherever they appear.
QUANTITIES = {
    "reward/mean": ("reward (total)", "", "#1f77b4"),
    "accuracy": ("accuracy", "fraction", "#2ca02c"),
    "kl/k1": ("k1", "nats/token", "#9467bd"),
    "kl/k2": ("k2", "nats/token", "#17becf"),
    "kl/k3": ("k3", "nats/token", "#e377c2"),
    "len/mean": ("len all", "tokens", "#555555"),
    "len/correct": ("len correct", "tokens", "#2ca02c"),
    "len/incorrect": ("len incorrect", "tokens", "#d62728"),
    "loss": ("loss", "", "#111111"),
    "grad_norm": ("grad norm", "L2", "#ff7f0e"),
    "adv/frac_zero_std": ("zero-spread groups", "fraction", "#8c564b"),
    "clip/ratio_low": ("clipped low", "fraction", "#3949ab"),
    "clip/ratio_high": ("clipped high", "fraction", "#e65100"),
    "entropy": ("entropy", "nats/token", "#00897b"),
    "len/truncated_frac": ("truncated", "fraction", "#6d4c41"),
    "reward/per_turn": ("reward per turn", "", "#5c6bc0"),
    "turns/mean": ("turns", "per episode", "#9e9d24"),
    "tools/call_rate": ("tool calls", "fraction", "#f9a825"),
    "tools/failure_rate": ("tool failures", "fraction", "#ad1457"),
}
REWARD_COLORS = ("#0d47a1", "#4e342e", "#00838f", "#6a1b9a", "#827717", "#bf360c", "#37474f")
"""A reward function's dashed line takes one of these, chosen by a hash of its name."""

# panel title -> metric keys; per reward function traces are added to panel 0.
PANELS = [
    ("reward per completion", ["reward/mean", "accuracy"]),
    ("KL to π_ref (nats/token)", ["kl/k1", "kl/k2", "kl/k3"]),
    ("completion length (tokens)", ["len/mean", "len/correct", "len/incorrect"]),
    ("why is my loss zero?", ["loss", "grad_norm", "adv/frac_zero_std"]),
    ("clipped tokens (fraction)", ["clip/ratio_low", "clip/ratio_high"]),
    ("entropy (nats/token), truncated", ["entropy", "len/truncated_frac"]),
]
ROWS, COLS = 2, 3
TOOL_TRACES = [
    (0, "reward/per_turn"),
    (2, "turns/mean"),
    (5, "tools/call_rate"),
    (5, "tools/failure_rate"),
]
"""Multi-turn runs (``labkit.algos.multiturn``): traces shown when the log has the key."""
DOCTOR_PANELS = [
    ("zero_spread", 3),
    ("advantages_zero", 3),
    ("grad_spike", 3),
    ("lr_too", 3),
    ("truncation", 5),
    ("entropy_collapse", 5),
    ("blow_up[kl", 1),
    ("blow_up[ratio", 4),
    ("clip_", 4),
]
"""Run doctor rule (prefix) -> the panel its warning sits on; any other rule: the reward panel."""


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
    out = [(p, key, QUANTITIES[key][0]) for p, (_, keys) in enumerate(PANELS) for key in keys]
    tools = [(p, k, QUANTITIES[k][0]) for p, k in TOOL_TRACES if rows and k in rows[0]]
    # tools before rewards: a reward swapped in later appends its trace at the end
    return out + tools + [(0, k, k.split("/")[1]) for k in reward_keys(rows)]


def trace_style(panel: int, key: str, name: str) -> dict:
    """Colour, dash, legend and hover text of one trace (a ``fig.add_scatter`` keyword dict).

    >>> s = trace_style(1, "kl/k3", "k3")
    >>> s["line"]["color"], s["legend"], s["hovertemplate"]
    ('#e377c2', 'legend2', 'k3<br>step %{x}<br>%{y:.4g} nats/token<extra></extra>')
    """
    if key in QUANTITIES:
        _, unit, color = QUANTITIES[key]
        dash = None
    else:  # rewards/<fn>/mean: a stable colour from the name (Python's hash() is salted)
        unit, dash = "", "dash"
        color = REWARD_COLORS[zlib.crc32(name.encode()) % len(REWARD_COLORS)]
    value = "%{y:.4g}" + (f" {unit}" if unit else "")
    return {
        "name": name,
        "mode": "lines",
        "line": {"color": color, "dash": dash, "width": 2},
        "legend": "legend" if panel == 0 else f"legend{panel + 1}",
        "hovertemplate": f"{html.escape(name)}<br>step %{{x}}<br>{value}<extra></extra>",
    }


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


def _axes(panel: int) -> tuple[str, str]:
    """The x and y axis names of a panel: ('x', 'y') for the first, ('x2', 'y2') next, ..."""
    n = "" if panel == 0 else str(panel + 1)
    return f"x{n}", f"y{n}"


def event_shapes(events: list[dict]) -> tuple[list[dict], list[dict]]:
    """Vertical dotted lines (one per event, in every panel) at step + 0.5, and one label each
    on the first panel: (shapes, annotations) for ``fig.layout``."""
    shapes, notes = [], []
    for e in events:
        x = e["step"] + 0.5
        for i in range(ROWS * COLS):
            xa, ya = _axes(i)
            shapes.append(
                {
                    "type": "line",
                    "x0": x,
                    "x1": x,
                    "xref": xa,
                    "y0": 0,
                    "y1": 1,
                    "yref": f"{ya} domain",
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


def doctor_panel(rule: str) -> int:
    """The panel a run doctor rule's warning belongs on.

    >>> doctor_panel("zero_spread[reward]"), doctor_panel("blow_up[kl/k3]"), doctor_panel("x")
    (3, 1, 0)
    """
    return next((p for prefix, p in DOCTOR_PANELS if rule.startswith(prefix)), 0)


def doctor_notes(findings) -> list[dict]:
    """One red warning per panel that has findings (``labkit.runs.diagnose``), in its bottom
    right corner: the rules' names, with the evidence and the fix on hover."""
    by_panel: dict[int, list] = {}
    for f in findings:
        by_panel.setdefault(doctor_panel(f.rule), []).append(f)
    notes = []
    for p, fs in sorted(by_panel.items()):
        xa, ya = _axes(p)
        notes.append(
            {
                "x": 1,
                "xref": f"{xa} domain",
                "y": 0.02,
                "yref": f"{ya} domain",
                "xanchor": "right",
                "yanchor": "bottom",
                "showarrow": False,
                "text": "⚠ " + ", ".join(dict.fromkeys(f.rule.split("[")[0] for f in fs)),
                "hovertext": "<br>".join(
                    html.escape(f"{f.rule}: {f.evidence}. Fix: {f.fix}") for f in fs
                ),
                "font": {"size": 11, "color": "#b71c1c"},
                "bgcolor": "#ffebee",
                "bordercolor": "#b71c1c",
                "borderpad": 3,
                "name": f"doctor-{p}",
            }
        )
    return notes


def _legends() -> dict:
    """One legend per panel (``legend``, ``legend2``, ...) in its top-left corner, see-through
    so a line under it still shows. (Above the plot area a row of entries would spill into the
    next panel: plotly wraps a legend at the figure's edge, not the panel's.)"""
    fig = make_subplots(rows=ROWS, cols=COLS, **_SPACING)
    out = {}
    for p in range(ROWS * COLS):
        xa, ya = _axes(p)
        xd = fig.layout[xa.replace("x", "xaxis")].domain
        yd = fig.layout[ya.replace("y", "yaxis")].domain
        out["legend" if p == 0 else f"legend{p + 1}"] = {
            "x": xd[0] + 0.004,
            "y": yd[1] - 0.01,
            "xanchor": "left",
            "yanchor": "top",
            "bgcolor": "rgba(255,255,255,0.65)",
            "font": {"size": 11},
            "itemwidth": 30,
            "tracegroupgap": 0,
        }
    return out


_SPACING = {"horizontal_spacing": 0.06, "vertical_spacing": 0.14}


def live_figure(rows: list[dict] = (), events: list[dict] = (), findings=()) -> go.Figure:
    """The six-panel figure of the dashboard, filled with ``rows`` (metric dicts), ``events``
    (the run log's event rows) and the run doctor's ``findings``."""
    rows = list(rows)
    fig = make_subplots(rows=ROWS, cols=COLS, subplot_titles=[t for t, _ in PANELS], **_SPACING)
    for (p, key, name), (x, y) in zip(trace_keys(rows), live_series(rows)):
        fig.add_scatter(x=x, y=y, row=p // COLS + 1, col=p % COLS + 1, **trace_style(p, key, name))
    shapes, notes = event_shapes(list(events))
    fig.update_annotations(font={"size": 13})  # the panel titles
    fig.update_layout(
        height=520,
        margin={"t": 30, "b": 40, "l": 45, "r": 10},
        hovermode="closest",
        shapes=shapes,
        annotations=list(fig.layout.annotations) + notes + doctor_notes(findings),
        **_legends(),
    )
    fig.update_xaxes(title_text="step", title_standoff=4, row=2)
    return fig
