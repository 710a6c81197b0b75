"""Classic explorers without a browser: construct, set .value, .click(), read the figure."""

import json

import numpy as np

from labkit.classic import frozen_lake, gridworld, value_iteration
from labkit.widgets.classic import (
    PGExplorer,
    PredictionExplorer,
    TDControlExplorer,
    ValueIterationExplorer,
)


def _json_safe(fig):
    """A FigureWidget's state goes to the browser as strict JSON: a NaN makes the message fail."""
    state = {k: v for k, v in fig.get_state().items() if not isinstance(v, bytes | memoryview)}
    json.dumps(state, allow_nan=False, default=str)


def test_value_iteration_explorer_follows_the_sweep_slider():
    mdp = frozen_lake()
    w = ValueIterationExplorer(mdp)
    w.sweep.value = 1
    z1 = np.array(w.fig.data[0].z, dtype=float)
    assert np.nansum(z1) == 1.0  # one sweep: only the cell next to the goal knows V = 1
    w.sweep.value = w.sweep.max
    V, _, _, _ = value_iteration(mdp, w.gamma.value)
    np.testing.assert_allclose(np.array(w.fig.data[0].z, dtype=float).ravel(), V, atol=1e-8)
    assert len(w.fig.data[1].text) == 11  # one arrow per non-terminal cell
    w.gamma.value = 0.5
    assert np.array(w.fig.data[0].z, dtype=float)[0, 0] < V[0]
    _json_safe(w.fig)


def test_td_control_explorer_runs_and_draws():
    w = TDControlExplorer(episodes=60, every=20)
    w.method.value = "sarsa"
    w.epsilon.value = 0.2
    w.episodes.value = 60
    w.run.click()
    sarsa = w.fig.data[3 + 1]
    assert len(sarsa.y) == 60 and len(w.fig.data[3].y) == 0  # only SARSA's curve drawn
    assert len(w.fig.data[1].text) > 0  # arrows
    assert w.fig.data[2].x[0] == 0  # greedy path starts at the start cell (column 0)
    assert "sarsa: episode 60/60" in w.status.value
    _json_safe(w.fig)


def test_prediction_explorer_updates_curves():
    w = PredictionExplorer(runs=10, episodes=10)
    w.runs.value = 20
    before = np.array(w.fig.data[1].y, dtype=float)
    w.run.click()
    after = np.array(w.fig.data[1].y, dtype=float)
    assert after.shape == (10,) and not np.allclose(before, after)


def test_pg_explorer_learns():
    w = PGExplorer(mdp=gridworld(), iterations=30, every=10)
    w.advantage.value = "gae"
    w.lam.value = 0.9
    w.iterations.value = 30
    w.run.click()
    curve = np.array(w.fig.data[3 + 2].y, dtype=float)
    assert len(curve) == 30 and curve[-1] > curve[0]
    _json_safe(w.fig)
