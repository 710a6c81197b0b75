"""Value and policy iteration against values computed independently of them."""

from collections import deque

import numpy as np
import pytest

from labkit.classic import (
    cliff_walking,
    frozen_lake,
    gridworld,
    policy_evaluation,
    policy_iteration,
    q_from_v,
    random_walk,
    value_iteration,
)


def _bfs_steps_to_goal(desc: tuple[str, ...], rows: int, cols: int) -> np.ndarray:
    """Fewest moves from each cell to G, not through holes (inf when unreachable)."""
    goal = desc.index("G")
    d = np.full(rows * cols, np.inf)
    d[goal], todo = 0, deque([goal])
    while todo:
        s = todo.popleft()
        r, c = divmod(s, cols)
        for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            r2, c2 = r + dr, c + dc
            s2 = r2 * cols + c2
            if 0 <= r2 < rows and 0 <= c2 < cols and desc[s2] not in "HG" and d[s2] == np.inf:
                d[s2] = d[s] + 1
                todo.append(s2)
    return d


@pytest.mark.parametrize("map_name,size", [("4x4", 4), ("8x8", 8)])
@pytest.mark.parametrize("gamma", [0.9, 0.99])
def test_value_iteration_deterministic_frozen_lake_closed_form(map_name, size, gamma):
    mdp = frozen_lake(slippery=False, map_name=map_name)
    V, _, _, _ = value_iteration(mdp, gamma)
    d = _bfs_steps_to_goal(mdp.labels, size, size)
    known = np.where(np.isfinite(d) & (d > 0), gamma ** (d - 1), 0.0)  # reward 1 on the last step
    assert np.abs(V - known).max() < 1e-6
    if map_name == "4x4":
        assert V[0] == pytest.approx(gamma**5, abs=1e-9)  # 6 steps from S to G


def _optimal_by_linear_solve(mdp, pi, gamma):
    """V of pi from numpy.linalg.solve, and the Bellman optimality residual of that V."""
    S = mdp.n_states
    P = np.array([mdp.P[s, pi[s]] * (1 - mdp.done[s, pi[s]]) for s in range(S)])
    r = np.array([(mdp.P[s, pi[s]] * mdp.R[s, pi[s]]).sum() for s in range(S)])
    V = np.linalg.solve(np.eye(S) - gamma * P, r)
    Q = np.einsum("sat,sat->sa", mdp.P, mdp.R + gamma * (1 - mdp.done) * V[None, None, :])
    return V, np.abs(Q.max(1) - V).max()


@pytest.mark.parametrize("map_name", ["4x4", "8x8"])
@pytest.mark.parametrize("gamma", [0.9, 0.99])
def test_value_iteration_slippery_frozen_lake_matches_linear_solve(map_name, gamma):
    mdp = frozen_lake(slippery=True, map_name=map_name)
    V, _, pi, _ = value_iteration(mdp, gamma)
    V_exact, residual = _optimal_by_linear_solve(mdp, pi, gamma)
    assert residual < 1e-9  # V_exact solves the Bellman optimality equation: pi is optimal
    assert np.abs(V - V_exact).max() < 1e-6
    Vp, _, pi_p, _ = policy_iteration(mdp, gamma)
    assert np.abs(Vp - V_exact).max() < 1e-6
    assert np.abs(policy_evaluation(mdp, pi_p, gamma) - V_exact).max() < 1e-6


def test_slippery_4x4_published_values():
    # Widely reproduced numbers: V*(start) = 0.542 at gamma = 0.99; success probability of the
    # optimal policy with gamma = 1 is 14/17 = 0.8235 (absorbing-chain solution).
    V99, _, _, _ = value_iteration(frozen_lake(slippery=True), 0.99)
    assert V99[0] == pytest.approx(0.5420, abs=1e-4)
    V1, _, _, _ = value_iteration(frozen_lake(slippery=True), 1.0)
    assert V1[0] == pytest.approx(14 / 17, abs=1e-6)


@pytest.mark.parametrize(
    "mdp",
    [gridworld(), gridworld(slip=0.2, step_reward=-0.05), cliff_walking()],
    ids=["grid", "grid-slip", "cliff"],
)
def test_policy_iteration_agrees_with_value_iteration(mdp):
    gamma = 0.95
    V, Q, pi, _ = value_iteration(mdp, gamma)
    Vp, _, pi_p, stats = policy_iteration(mdp, gamma)
    assert np.abs(V - Vp).max() < 1e-6
    # both greedy policies achieve the optimal values
    assert np.abs(policy_evaluation(mdp, pi, gamma) - Vp).max() < 1e-6
    assert np.abs(policy_evaluation(mdp, pi_p, gamma) - V).max() < 1e-6
    assert np.abs(q_from_v(mdp, Vp, gamma) - Q).max() < 1e-6
    assert stats["iterations"] < 30


def test_cliff_walking_optimal_values_count_steps():
    V, _, _, _ = value_iteration(cliff_walking(), 1.0)
    assert V[36] == -13  # 13 steps along the edge, -1 each
    assert V[35] == -1 and V[47] == 0


def test_random_walk_exact_values():
    V = policy_evaluation(random_walk(), np.full((7, 2), 0.5), 1.0)
    np.testing.assert_allclose(V, [0, 1 / 6, 2 / 6, 3 / 6, 4 / 6, 5 / 6, 0], atol=1e-12)


def test_terminal_states_and_walls():
    mdp = gridworld()
    assert mdp.terminal.nonzero()[0].tolist() == [17, 24]  # pit and goal
    assert not mdp.reachable[4] and not mdp.reachable[6]  # walls
    with pytest.raises(ValueError, match="gamma"):
        value_iteration(mdp, 1.5)
    with pytest.raises(ValueError, match="slip"):
        gridworld(slip=1.0)
