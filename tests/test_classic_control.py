"""Q-learning vs SARSA on CliffWalking (Sutton & Barto, Example 6.6), and the bandit testbed."""

import numpy as np
import pytest

from labkit.classic import (
    ControlConfig,
    bandit_testbed,
    cliff_walking,
    epsilon_greedy_probs,
    greedy_path,
    run_bandit,
    td_control,
    value_iteration,
)

CLIFF = cliff_walking()
COLS = 12


def _inner_rows(path):
    """Rows of the path's cells in columns 1..10 (the stretch above the cliff)."""
    return {s // COLS for s in path if 1 <= s % COLS <= 10}


@pytest.fixture(scope="module")
def runs():
    return {m: td_control(CLIFF, ControlConfig(method=m, seed=0)) for m in ("q_learning", "sarsa")}


def test_sarsa_earns_more_online(runs):
    last = 100
    q_ret = runs["q_learning"][1]["returns"][-last:].mean()
    s_ret = runs["sarsa"][1]["returns"][-last:].mean()
    assert s_ret > q_ret + 5  # measured seed 0: SARSA -23.6, Q-learning -39.8


def test_q_learning_walks_the_cliff_edge(runs):
    path = greedy_path(CLIFF, runs["q_learning"][0])
    assert path[0] == 36 and path[-1] == 47
    assert _inner_rows(path) == {2}  # the row right above the cliff
    assert len(path) - 1 == 13  # the optimal (shortest) path
    V_star, _, _, _ = value_iteration(CLIFF, 1.0)
    assert -(len(path) - 1) == V_star[36]


def test_sarsa_takes_a_safer_path(runs):
    path = greedy_path(CLIFF, runs["sarsa"][0])
    assert path[0] == 36 and path[-1] == 47
    assert max(_inner_rows(path)) <= 1  # at least one row away from the edge


def test_result_holds_on_average_over_seeds():
    q, s = [], []
    for seed in range(1, 5):
        q.append(
            td_control(CLIFF, ControlConfig("q_learning", seed=seed))[1]["returns"][-100:].mean()
        )
        s.append(td_control(CLIFF, ControlConfig("sarsa", seed=seed))[1]["returns"][-100:].mean())
    assert np.mean(s) > np.mean(q) + 5


def test_epsilon_greedy_probabilities():
    p = epsilon_greedy_probs(np.array([[1.0, 1.0, 0.0]]), 0.3)
    np.testing.assert_allclose(p, [[0.45, 0.45, 0.1]])
    rng = np.random.default_rng(0)
    from labkit.classic import epsilon_greedy

    counts = (
        np.bincount(
            [epsilon_greedy(np.array([0.0, 2.0, 1.0]), 0.3, rng) for _ in range(20_000)],
            minlength=3,
        )
        / 20_000
    )
    np.testing.assert_allclose(
        counts, epsilon_greedy_probs(np.array([0.0, 2.0, 1.0]), 0.3), atol=0.01
    )


def test_config_rejects_bad_values():
    with pytest.raises(ValueError, match="method must be one of"):
        ControlConfig(method="dqn")
    with pytest.raises(ValueError, match="epsilon"):
        ControlConfig(epsilon=1.5)


def test_bandit_testbed_reproduces_figure_2_2():
    q_star = bandit_testbed(runs=1000, seed=0)
    greedy = run_bandit(q_star, steps=1000, epsilon=0.0)
    eps = run_bandit(q_star, steps=1000, epsilon=0.1)
    # Sutton & Barto Fig. 2.2 after 1000 steps: greedy ~1.05 reward, ~36% optimal;
    # epsilon = 0.1 ~1.35 reward, ~80% optimal
    assert eps["reward"][-200:].mean() > greedy["reward"][-200:].mean() + 0.2
    assert 0.25 < greedy["optimal"][-200:].mean() < 0.5
    assert 0.7 < eps["optimal"][-200:].mean() < 0.9
