"""Figures for the classic RL labs: value heatmaps with greedy arrows, learning and error curves.

Pure builders: arrays in, ``plotly.graph_objects.Figure`` out. Heatmaps are traces (not layout
annotations), so a widget can update them in place.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def grid_traces(
    mdp,
    V: np.ndarray,
    policy: np.ndarray | None = None,
    path: list[int] | None = None,
    zmin: float | None = None,
    zmax: float | None = None,
) -> list:
    """Three traces on the grid of ``mdp``: heatmap of V, greedy arrows, a path (may be empty).

    Cells that can never be occupied (walls, the cliff) are blank; terminal cells show their
    letter instead of an arrow.
    """
    rows, cols = mdp.shape
    # None (not NaN) marks blank cells: a FigureWidget's JSON messages cannot carry NaN
    z = [
        [float(V[r * cols + c]) if mdp.reachable[r * cols + c] else None for c in range(cols)]
        for r in range(rows)
    ]
    labels = np.array(mdp.labels if mdp.labels else [""] * mdp.n_states)
    text = [
        f"{lab}<br>{v:.2f}" if ok else lab
        for lab, v, ok in zip(labels, V, mdp.reachable, strict=True)
    ]
    heat = go.Heatmap(
        z=z,
        text=np.array(text).reshape(rows, cols),
        texttemplate="%{text}",
        colorscale="Viridis",
        zmin=zmin,
        zmax=zmax,
        showscale=True,
        colorbar={"title": "V", "len": 0.8},
        hovertemplate="V=%{z:.3f}<extra></extra>",
    )
    return [heat, arrow_trace(mdp, policy), path_trace(mdp, path)]


def arrow_trace(mdp, policy: np.ndarray | None) -> go.Scatter:
    """Greedy-policy arrows (a text scatter) on live, non-terminal cells."""
    cols = mdp.shape[1]
    live = np.flatnonzero(mdp.reachable & ~mdp.terminal) if policy is not None else []
    return go.Scatter(
        x=[s % cols for s in live],
        y=[s // cols + 0.3 for s in live],
        text=[mdp.arrows[int(policy[s])] for s in live],
        mode="text",
        textfont={"size": 18, "color": "white"},
        hoverinfo="skip",
        showlegend=False,
        name="policy",
    )


def path_trace(mdp, path: list[int] | None) -> go.Scatter:
    """A line through the cells of ``path`` (e.g. the greedy path from the start)."""
    cols = mdp.shape[1]
    path = path or []
    return go.Scatter(
        x=[s % cols for s in path],
        y=[s // cols for s in path],
        mode="lines",
        line={"color": "red", "width": 4},
        opacity=0.6,
        showlegend=False,
        name="greedy path",
        hoverinfo="skip",
    )


def value_heatmap(
    mdp,
    V: np.ndarray,
    policy: np.ndarray | None = None,
    path: list[int] | None = None,
    title: str = "",
) -> go.Figure:
    """V(s) as a heatmap over the grid, with greedy arrows and an optional path.

    >>> from labkit.classic import frozen_lake, value_iteration
    >>> m = frozen_lake(); V, Q, pi, _ = value_iteration(m, 0.9)
    >>> fig = value_heatmap(m, V, pi); len(fig.data), fig.data[1].text[0]
    (3, '↓')
    """
    fig = go.Figure(grid_traces(mdp, V, policy, path))
    rows, cols = mdp.shape
    fig.update_yaxes(autorange="reversed", showticklabels=False, scaleanchor="x")
    fig.update_xaxes(showticklabels=False)
    return fig.update_layout(
        title=title,
        width=min(120 + 70 * cols, 950),
        height=120 + 75 * rows,
        margin={"l": 20, "r": 20, "t": 50, "b": 20},
    )


def q_heatmap(mdp, Q: np.ndarray, path: list[int] | None = None, title: str = "") -> go.Figure:
    """max_a Q(s, a) with the greedy arrows argmax_a Q(s, a)."""
    return value_heatmap(mdp, Q.max(-1), Q.argmax(-1), path, title)


def smooth(y: np.ndarray, window: int) -> np.ndarray:
    """Trailing moving average (the first points average what exists so far).

    >>> smooth(np.array([0., 2., 4., 6.]), 2).tolist()
    [0.0, 1.0, 3.0, 5.0]
    """
    y = np.asarray(y, dtype=float)
    c = np.cumsum(np.insert(y, 0, 0.0))
    n = np.minimum(np.arange(1, len(y) + 1), window)
    return (c[1:] - c[np.arange(1, len(y) + 1) - n]) / n


def learning_curves(
    curves: dict,
    window: int = 10,
    title: str = "",
    xaxis: str = "episode",
    yaxis: str = "return",
    x: np.ndarray | None = None,
) -> go.Figure:
    """One smoothed line per run: ``{"SARSA": returns, "Q-learning": returns}``.

    >>> fig = learning_curves({"a": np.arange(5.)}); fig.data[0].name
    'a'
    """
    fig = go.Figure()
    for i, (name, y) in enumerate(curves.items()):
        xs = np.arange(1, len(y) + 1) if x is None else x
        fig.add_scatter(
            x=xs,
            y=smooth(y, window),
            name=name,
            mode="lines",
            line={"color": COLORS[i % len(COLORS)]},
        )
    return fig.update_layout(title=title, xaxis_title=xaxis, yaxis_title=yaxis, height=380)


def bias_variance_curves(out: dict, title: str = "Estimates vs the exact V") -> go.Figure:
    """Squared bias, variance and RMSE vs episodes, one colour per estimator.

    ``out`` is :func:`labkit.classic.bias_variance`'s result (averages over states).
    """
    fig = make_subplots(1, 3, subplot_titles=("bias²", "variance", "RMSE"))
    for i, (name, st) in enumerate(out.items()):
        x = np.arange(len(st["var"]))
        for j, y in enumerate((st["bias2"], st["var"], np.sqrt(st["mse"]))):
            fig.add_scatter(
                x=x[1:],
                y=y[1:],
                name=name,
                legendgroup=name,
                showlegend=j == 0,
                line={"color": COLORS[i % len(COLORS)]},
                row=1,
                col=j + 1,
            )
    fig.update_xaxes(title_text="episodes")
    return fig.update_layout(title=title, height=380)


def gradient_variance_bars(
    out: dict, title: str = "Gradient estimates vs the exact gradient"
) -> go.Figure:
    """Per-episode variance (trace of the covariance) and squared bias of each estimator, log y.

    >>> fig = gradient_variance_bars({"a": {"var": 2., "bias2": .1, "se2": .01, "norm2": 1.}})
    >>> [t.name for t in fig.data]
    ['variance (per episode)', 'bias²', 'noise floor of bias² (var / N)']
    """
    names = list(out)
    fig = go.Figure()
    for key, label in (
        ("var", "variance (per episode)"),
        ("bias2", "bias²"),
        ("se2", "noise floor of bias² (var / N)"),
    ):
        fig.add_bar(x=names, y=[out[n][key] for n in names], name=label)
    norm2 = next(iter(out.values()))["norm2"]
    fig.add_hline(y=norm2, line_dash="dot", annotation_text="‖∇J‖²")
    return fig.update_layout(title=title, yaxis_type="log", barmode="group", height=400)


def gae_sweep_plot(out: dict, title: str = "GAE: bias and variance vs λ") -> go.Figure:
    """bias² and variance of the GAE(λ) gradient estimate against λ (from gae_lambda_sweep)."""
    lams = sorted(out)
    fig = go.Figure()
    fig.add_scatter(
        x=lams, y=[out[lam]["bias2"] for lam in lams], name="bias²", mode="lines+markers"
    )
    fig.add_scatter(
        x=lams,
        y=[out[lam]["var"] for lam in lams],
        name="variance (per episode)",
        mode="lines+markers",
    )
    fig.add_scatter(
        x=lams,
        y=[out[lam]["se2"] for lam in lams],
        name="noise floor (var / N)",
        mode="lines",
        line={"dash": "dot"},
    )
    return fig.update_layout(title=title, xaxis_title="λ", yaxis_type="log", height=380)


def bandit_curves(results: dict, title: str = "10-armed testbed") -> go.Figure:
    """Average reward and % optimal action vs step for each strategy (``run_bandit`` outputs)."""
    fig = make_subplots(1, 2, subplot_titles=("average reward", "% optimal action"))
    for i, (name, r) in enumerate(results.items()):
        x = np.arange(1, len(r["reward"]) + 1)
        color = {"color": COLORS[i % len(COLORS)]}
        fig.add_scatter(x=x, y=r["reward"], name=name, line=color, legendgroup=name, row=1, col=1)
        fig.add_scatter(
            x=x,
            y=100 * r["optimal"],
            name=name,
            line=color,
            legendgroup=name,
            showlegend=False,
            row=1,
            col=2,
        )
    fig.update_xaxes(title_text="step")
    return fig.update_layout(title=title, height=380)


def value_and_curve(
    mdp,
    V: np.ndarray,
    policy: np.ndarray | None,
    curves: dict,
    path: list[int] | None = None,
    title: str = "",
    window: int = 10,
    curve_title: str = "return per episode",
) -> go.Figure:
    """Heatmap + arrows (left) and learning curves (right) in one figure (for live widgets).

    Traces 0-2 are the grid (heatmap, arrows, path); trace 3 + i is curve i.
    """
    cols = mdp.shape[1]
    wide = cols > 6
    fig = make_subplots(
        2 if wide else 1, 1 if wide else 2, subplot_titles=("V and greedy policy", curve_title)
    )
    for tr in grid_traces(mdp, V, policy, path):
        fig.add_trace(tr, row=1, col=1)
    r, c = (2, 1) if wide else (1, 2)
    for i, (name, y) in enumerate(curves.items()):
        fig.add_scatter(
            x=np.arange(1, len(y) + 1),
            y=smooth(y, window),
            name=name,
            mode="lines",
            line={"color": COLORS[i % len(COLORS)]},
            row=r,
            col=c,
        )
    fig.data[0].colorbar.update(
        x=0.45 if not wide else 1.02, len=0.45 if wide else 0.9, y=0.8 if wide else 0.5
    )
    fig.update_yaxes(autorange="reversed", showticklabels=False, row=1, col=1)
    fig.update_xaxes(showticklabels=False, row=1, col=1)
    return fig.update_layout(title=title, height=650 if wide else 420, width=950)


def board_visits(
    board: tuple[int, ...], visits: np.ndarray, q: np.ndarray, title: str = "MCTS visit counts"
) -> go.Figure:
    """Tic-tac-toe board: visit count N(s, a) per empty cell (colour), Q and X/O as text.

    >>> fig = board_visits((1, 0, 0, 0, -1, 0, 0, 0, 0), np.arange(9), np.zeros(9))
    >>> fig.data[0].text[0][0], fig.data[0].text[1][1]
    ('X', 'O')
    """
    marks = {1: "X", -1: "O"}
    text = [marks.get(b, f"N={n}<br>Q={v:+.2f}") for b, n, v in zip(board, visits, q, strict=True)]
    z = [[None if board[3 * r + c] else int(visits[3 * r + c]) for c in range(3)] for r in range(3)]
    fig = go.Figure(
        go.Heatmap(
            z=z,
            text=np.array(text).reshape(3, 3),
            texttemplate="%{text}",
            colorscale="Blues",
            showscale=False,
            textfont={"size": 16},
        )
    )
    fig.update_yaxes(autorange="reversed", showticklabels=False, scaleanchor="x")
    fig.update_xaxes(showticklabels=False)
    return fig.update_layout(title=title, width=380, height=400)
