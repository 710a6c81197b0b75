"""Exercises of the classic labs (20, 21, 22), checked by ``lk.testing.check(name, answer)``.

Each checker runs the student's function next to labkit's implementation on the same inputs.
"""

from __future__ import annotations

import numpy as np
import torch

from labkit.classic.control import epsilon_greedy_probs, td_target
from labkit.classic.dp import q_from_v
from labkit.classic.envs import frozen_lake
from labkit.core.advantages import discounted_returns, gae
from labkit.testing import assert_close, exercise


@exercise("bellman_backup")
def _bellman_backup(fn) -> None:
    """fn(P, R, done, V, gamma) -> Q [S, A] with Q = sum_s' P (R + gamma (1 - done) V(s'))."""
    mdp, rng = frozen_lake(slippery=True), np.random.default_rng(0)
    V = rng.random(mdp.n_states)
    got = fn(mdp.P, mdp.R, mdp.done, V, 0.9)
    assert_close(got, q_from_v(mdp, V, 0.9), "Q on slippery FrozenLake with a random V")


@exercise("frozen_lake_start_value")
def _start_value(value) -> None:
    """V*(start) of the deterministic 4x4 FrozenLake at gamma = 0.9, by hand."""
    assert_close(value, 0.9**5, "V*(S), 6 moves, reward 1 on the last")


@exercise("td0_update")
def _td0(fn) -> None:
    """fn(V, s, r, s_next, done, alpha, gamma) -> the new V(s)."""
    rng = np.random.default_rng(1)
    for _ in range(20):
        V = rng.normal(size=5)
        s, s2 = rng.integers(5, size=2)
        r, alpha, done = rng.normal(), rng.uniform(0.05, 1), bool(rng.random() < 0.3)
        target = r + (0.0 if done else 0.9 * V[s2])
        want = V[s] + alpha * (target - V[s])
        assert_close(
            fn(V.copy(), int(s), r, int(s2), done, alpha, 0.9),
            want,
            f"new V(s) for s={s}, r={r:.2f}, s'={s2}, done={done}",
        )


@exercise("mc_returns")
def _mc_returns(fn) -> None:
    """fn(rewards, gamma) -> [G_0, ..., G_{T-1}] of one episode."""
    r = [0.0, -1.0, 0.5, 2.0]
    want = discounted_returns(torch.tensor([r]), torch.ones(1, 4), 0.9)[0]
    assert_close(fn(r, 0.9), want, "returns of rewards [0, -1, 0.5, 2] with gamma 0.9")


@exercise("epsilon_greedy_probs")
def _eps_greedy(fn) -> None:
    """fn(q, epsilon) -> pi(.|s), ties splitting the greedy mass."""
    for q, eps in (([1.0, 3.0, 2.0], 0.1), ([0.0, 0.0], 0.5), ([5.0, 1.0, 5.0, 0.0], 0.2)):
        assert_close(
            fn(np.array(q), eps),
            epsilon_greedy_probs(np.array(q), eps),
            f"pi for Q(s, .) = {q}, epsilon = {eps}",
        )


@exercise("td_targets")
def _td_targets(fn) -> None:
    """fn(r, q_next, a_next, gamma, done) -> (Q-learning target, SARSA target)."""
    q_next = np.array([1.0, 4.0, -2.0])
    for a_next, done in ((0, False), (2, False), (1, True)):
        got = fn(-1.0, q_next, a_next, 0.9, done)
        want = [td_target(m, -1.0, q_next, a_next, 0.9, 0.1, done) for m in ("q_learning", "sarsa")]
        assert_close(got, want, f"(Q-learning, SARSA) targets, a'={a_next}, done={done}")


@exercise("dqn_target")
def _dqn_target(fn) -> None:
    """fn(r [B], done [B], q_next [B, A], gamma) -> y [B]."""
    g = torch.Generator().manual_seed(0)
    r, q_next = torch.randn(6, generator=g), torch.randn(6, 4, generator=g)
    done = torch.tensor([0.0, 1.0, 0.0, 0.0, 1.0, 0.0])
    want = r + 0.9 * (1 - done) * q_next.max(-1).values
    assert_close(fn(r, done, q_next, 0.9), want, "y = r + gamma (1 - done) max_a' Q-(s', a')")


@exercise("reward_to_go")
def _reward_to_go(fn) -> None:
    """fn(rewards [B, T], mask [B, T], gamma) -> G [B, T] (0 past each episode's end)."""
    r = torch.tensor([[0.0, 0.0, 1.0, 0.0], [-1.0, 2.0, 0.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0]])
    assert_close(fn(r, mask, 0.5), discounted_returns(r, mask, 0.5), "reward-to-go")


@exercise("grad_log_softmax")
def _grad_log_softmax(fn) -> None:
    """fn(theta_s [A], a) -> d log softmax(theta_s)[a] / d theta_s."""
    theta = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
    for a in range(3):
        (want,) = torch.autograd.grad(torch.log_softmax(theta, -1)[a], theta)
        assert_close(fn(theta.detach(), a), want, f"gradient for a = {a}")


@exercise("gae")
def _gae(fn) -> None:
    """fn(rewards [T], values [T], gamma, lam) -> A [T], episode ends after the last step."""
    r, v = torch.tensor([0.0, 1.0, 0.0, 2.0]), torch.tensor([0.5, 0.2, 1.0, 0.7])
    for lam in (0.0, 0.5, 1.0):
        want, _ = gae(r[None], v[None], torch.ones(1, 4), 0.9, lam)
        assert_close(fn(r, v, 0.9, lam), want[0], f"GAE with lambda = {lam}", atol=1e-5)
