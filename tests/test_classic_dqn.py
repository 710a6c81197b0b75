"""DQN solves the gridworld; its loss is the squared TD error."""

import numpy as np
import pytest
import torch

from labkit.classic import (
    DQNConfig,
    dqn_loss,
    greedy_path,
    greedy_return,
    gridworld,
    q_table,
    train_dqn,
    value_iteration,
)

GRID = gridworld()


def assert_dqn_solves_the_gridworld(seed: int, device=None):
    """DQN (default config, ``seed``) on ``device`` ends with the optimal greedy path and a Q
    twice as close to Q* as at the start (tests/test_gpu_algos.py runs it on CUDA)."""
    V, Q_star, _, _ = value_iteration(GRID, 0.9)
    net, stats = train_dqn(GRID, DQNConfig(seed=seed), Q_star=Q_star, device=device)
    Q = q_table(net, GRID.n_states)
    assert greedy_return(GRID, Q, 0.9) == pytest.approx(V[0], abs=1e-9)  # optimal: 0.9 ** 7
    assert greedy_path(GRID, Q)[-1] == 24  # ends at the goal, 8 moves
    assert len(greedy_path(GRID, Q)) == 9
    assert stats["q_error"][-1] < 0.5 * stats["q_error"][0]  # Q approaches Q*
    return net, stats


@pytest.mark.parametrize("seed", [0, 1])
def test_dqn_solves_the_gridworld(seed):
    assert_dqn_solves_the_gridworld(seed)


def test_dqn_loss_is_squared_td_error_with_no_gradient_through_target():
    q = torch.tensor([[0.5, 1.0], [2.0, 0.0]], requires_grad=True)
    q_next = torch.tensor([[3.0, 1.0], [5.0, 5.0]], requires_grad=True)
    loss, _ = dqn_loss(
        q,
        torch.tensor([0, 0]),
        torch.tensor([1.0, 2.0]),
        torch.tensor([0.0, 1.0]),
        q_next,
        gamma=0.5,
    )
    # y = [1 + 0.5 * 3, 2 (terminal)] = [2.5, 2]; td = [2, 0]
    assert loss.item() == pytest.approx((2.0**2 + 0.0) / 2)
    loss.backward()
    assert q_next.grad is None
    np.testing.assert_allclose(q.grad.numpy(), [[-2.0, 0.0], [0.0, 0.0]])


def test_config_rejects_bad_values():
    with pytest.raises(ValueError, match="gamma"):
        DQNConfig(gamma=2.0)
    with pytest.raises(ValueError, match="batch_size"):
        DQNConfig(batch_size=0)
