"""Double DQN's target and the dueling head against hand-computed cases; the maximization-bias
chain's exact values; Double DQN and dueling still solve the gridworld."""

import numpy as np
import pytest
import torch

from labkit.classic import DQNConfig, dqn_loss, greedy_return, gridworld, q_table, train_dqn
from labkit.classic.dp import value_iteration
from labkit.classic.dqn import dqn_target, q_network
from labkit.classic.dueling import DuelingQNetwork, dueling_q, split_q
from labkit.classic.overestimation import goes_left, maximization_bias


def test_double_dqn_target_against_a_hand_computed_case():
    q = torch.tensor([[0.0, 1.0, 0.0], [2.0, 0.0, 0.0]], requires_grad=True)  # Q(s, .; theta)
    a, r, done = torch.tensor([1, 0]), torch.tensor([1.0, 0.5]), torch.tensor([0.0, 1.0])
    q_next = torch.tensor([[1.0, 5.0, 2.0], [3.0, 0.0, 4.0]])  # Q(s', .; theta^-)
    online = torch.tensor([[0.0, 1.0, 9.0], [7.0, 0.0, 1.0]])  # Q(s', .; theta): picks 2, 0
    # DQN: y = [1 + 0.5 * max(1, 5, 2), 0.5 (terminal)] = [3.5, 0.5]; td = [2.5, -1.5]
    dqn, _ = dqn_loss(q, a, r, done, q_next, gamma=0.5)
    assert dqn.item() == pytest.approx((2.5**2 + 1.5**2) / 2)
    # Double DQN: a' = argmax_a online = [2, 0]; y = [1 + 0.5 * q_next[0, 2], 0.5] = [2.0, 0.5]
    double, _ = dqn_loss(q, a, r, done, q_next, gamma=0.5, q_next_online=online)
    assert double.item() == pytest.approx((1.0**2 + 1.5**2) / 2)
    double.backward()  # d/dQ(s, a) of mean (y - Q)^2 = -(y - Q): [-1.0, +1.5]
    np.testing.assert_allclose(q.grad.numpy(), [[0.0, -1.0, 0.0], [1.5, 0.0, 0.0]])


def test_double_target_never_exceeds_dqn_target_and_equals_it_when_the_networks_agree():
    g = torch.Generator().manual_seed(0)
    q_next, online = torch.randn(64, 5, generator=g), torch.randn(64, 5, generator=g)
    r, done = torch.randn(64, generator=g), (torch.rand(64, generator=g) < 0.2).float()
    dqn, double = dqn_target(r, done, q_next, 0.9), dqn_target(r, done, q_next, 0.9, online)
    assert (double <= dqn).all() and (double < dqn).any()  # Q^-(s', argmax Q) <= max Q^-
    assert (double == dqn)[done == 1].all()  # a terminal transition bootstraps nothing
    torch.testing.assert_close(dqn_target(r, done, q_next, 0.9, q_next), dqn)  # theta = theta^-


def test_config_rejects_unknown_variants():
    with pytest.raises(ValueError, match="target='triple'"):
        DQNConfig(target="triple")
    with pytest.raises(ValueError, match="head='duel'"):
        DQNConfig(head="duel")


def test_dueling_head_is_identifiable_mean_advantage_zero():
    torch.manual_seed(0)
    net = DuelingQNetwork(7, 5, hidden=16)
    with torch.no_grad():
        net.advantage.bias.add_(3.0)  # shift every raw advantage: Q must not move
    x = torch.eye(7)
    V, A = net.streams(x)
    assert A.mean(-1).abs().max() < 1e-6  # sum_a A(s, a) = 0
    torch.testing.assert_close(V[:, 0], net(x).mean(-1))  # V(s) = mean_a Q(s, a)
    V0, A0 = torch.randn(4, 1), torch.randn(4, 3)
    torch.testing.assert_close(dueling_q(V0 + 2.0, A0), dueling_q(V0, A0) + 2.0)
    torch.testing.assert_close(dueling_q(V0, A0 + 5.0), dueling_q(V0, A0))  # A's offset drops


def test_dueling_head_represents_any_q_table():
    Q = torch.randn(6, 4, generator=torch.Generator().manual_seed(1))  # any Q [S, A]
    V, A = split_q(Q)
    torch.testing.assert_close(dueling_q(V, A), Q)
    net = DuelingQNetwork(6, 4, hidden=8)  # weights that output Q exactly, by construction
    with torch.no_grad():
        for layer in (net.trunk[0], net.trunk[2]):  # pass the one-hot state through the ReLUs
            layer.weight.copy_(torch.eye(8, layer.in_features))
            layer.bias.zero_()
        net.value.weight.copy_(torch.cat([V[:, 0], torch.zeros(2)])[None])
        net.value.bias.zero_()
        net.advantage.weight.copy_(torch.cat([A, torch.zeros(2, 4)]).T)
        net.advantage.bias.zero_()
    torch.testing.assert_close(net(torch.eye(6)), Q)


def test_q_network_builds_either_head():
    assert isinstance(q_network(5, 3, 8, head="dueling"), DuelingQNetwork)
    assert isinstance(q_network(5, 3, 8), torch.nn.Sequential)


def test_maximization_bias_chain_values():
    m = maximization_bias(n_actions=10, length=4)
    V, Q, pi, _ = value_iteration(m, gamma=0.9)
    B = [-0.1 * (1 - 0.9**k) / (1 - 0.9) for k in (4, 3, 2, 1)]  # V*(B_i): k steps of -0.1
    np.testing.assert_allclose(V, [0.0, *B, 0.0], atol=1e-9)
    assert Q[0, 0] == 0.0 and Q[0, 1:] == pytest.approx(0.9 * B[0]) and pi[0] == 0
    rng = np.random.default_rng(0)
    r = np.array([m.step(1, 3, rng)[1] for _ in range(20_000)])
    assert abs(r.mean() + 0.1) < 0.03 and abs(r.std() - 1.0) < 0.03  # N(-0.1, 1)
    assert m.step(0, 0, rng) == (5, 0.0, True)  # right: no noise, the episode ends
    assert not goes_left(Q) and goes_left(Q + np.eye(6, 10)[:, ::-1])  # a bump on action 9


def test_double_and_dueling_dqn_solve_the_gridworld():
    grid = gridworld()
    V, Q_star, _, _ = value_iteration(grid, 0.9)
    net, stats = train_dqn(grid, DQNConfig(seed=0, target="double", head="dueling"), Q_star)
    assert greedy_return(grid, q_table(net, 25), 0.9) == pytest.approx(V[0], abs=1e-9)
    assert stats["q_error"][-1] < 0.5 * stats["q_error"][0]
    assert len(stats["max_q_bias"]) == len(stats["Q"]) == len(stats["eval_step"])
