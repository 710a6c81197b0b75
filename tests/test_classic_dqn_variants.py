"""Double DQN's target and the dueling head against hand-computed cases and identities; an update
bootstraps from the target the config names; the maximization-bias chain's exact values and the
max estimator's closed-form bias; (slow) Double DQN with the dueling head still learns Q*."""

import numpy as np
import pytest
import torch

from labkit.classic import DQNConfig, dqn_loss, gridworld, train_dqn
from labkit.classic.dp import value_iteration
from labkit.classic.dqn import _update, dqn_target, q_network
from labkit.classic.dueling import DuelingQNetwork, dueling_q, split_q
from labkit.classic.overestimation import goes_left, max_bias, maximization_bias


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
    dqn = dqn_target(r, done, q_next, 0.9)
    double = dqn_target(r, done, q_next, 0.9, q_next_online=online)
    assert (double <= dqn).all() and (double < dqn).any()  # Q^-(s', argmax Q) <= max Q^-
    assert (double == dqn)[done == 1].all()  # a terminal transition bootstraps nothing
    same = dqn_target(r, done, q_next, 0.9, q_next_online=q_next)  # theta = theta^-
    torch.testing.assert_close(same, dqn)


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


def test_an_update_bootstraps_from_the_target_the_config_names():
    def table(rows):  # net(one-hot s) = rows[s]: one linear layer on the one-hot state
        layer = torch.nn.Linear(3, 2, bias=False)
        with torch.no_grad():
            layer.weight.copy_(torch.tensor(rows).T)
        return layer

    online = [[0.0, 0.0], [0.0, 0.0], [5.0, 1.0]]  # theta: a' = argmax Q(s'=2, .) = 0
    target = [[0.0, 0.0], [0.0, 0.0], [2.0, 4.0]]  # theta^-: values a' = 0 at 2, its max is 4
    batch = np.array([[0, 1, 1.0, 2, 0]])  # (s, a, r, s', done): Q(0, 1; theta) = 0
    for kind, y in (("dqn", 1 + 0.5 * 4), ("double", 1 + 0.5 * 2)):
        net = table(online)
        opt = torch.optim.SGD(net.parameters(), lr=0.0)
        out = _update(
            net, table(target), opt, batch, DQNConfig(gamma=0.5, target=kind), torch.eye(3)
        )
        assert out["loss"] == pytest.approx(y**2), kind


def test_the_max_of_sample_means_is_biased_up_and_the_double_estimator_is_not():
    rng = np.random.default_rng(0)
    b = max_bias(np.zeros(2), sigma=1.0, n=8, trials=200_000, rng=rng)
    # two equal arms, sample means N(0, s^2), s = 1 / sqrt(8): E[max] = s / sqrt(pi)
    assert b["single"] == pytest.approx(1 / np.sqrt(8 * np.pi), abs=0.005)
    assert b["double"] == pytest.approx(0.0, abs=0.005)
    b = max_bias(np.array([0.0, -0.1, -0.2]), sigma=1.0, n=8, trials=200_000, rng=rng)
    assert b["single"] > 0.05 and b["double"] < -0.02  # unequal means: double underestimates


@pytest.mark.slow
def test_double_dqn_with_the_dueling_head_learns_q_star():
    grid = gridworld()
    _, Q_star, _, _ = value_iteration(grid, 0.9)
    cfg = DQNConfig(seed=0, target="double", head="dueling", total_timesteps=2000)
    _, stats = train_dqn(grid, cfg, Q_star)
    assert stats["q_error"][-1] < 0.5 * stats["q_error"][0]
    assert len(stats["max_q_bias"]) == len(stats["Q"]) == len(stats["eval_step"])
