"""lk.testing.check: right answers pass, wrong ones fail with a message, crashes are caught."""

import numpy as np
import pytest
import torch

from labkit import testing


def bellman_backup(P, R, done, V, gamma):
    return (P * (R + gamma * (1 - done) * V[None, None, :])).sum(-1)


def td0_update(V, s, r, s_next, done, alpha, gamma):
    target = r + (0.0 if done else gamma * V[s_next])
    return V[s] + alpha * (target - V[s])


def mc_returns(rewards, gamma):
    G, out = 0.0, []
    for r in reversed(rewards):
        G = r + gamma * G
        out.append(G)
    return out[::-1]


def epsilon_greedy_probs(q, epsilon):
    best = q == q.max()
    return epsilon / len(q) + (1 - epsilon) * best / best.sum()


def td_targets(r, q_next, a_next, gamma, done):
    if done:
        return r, r
    return r + gamma * q_next.max(), r + gamma * q_next[a_next]


def dqn_target(r, done, q_next, gamma):
    return r + gamma * (1 - done) * q_next.max(-1).values


def reward_to_go(rewards, mask, gamma):
    G = torch.zeros_like(rewards)
    running = torch.zeros(rewards.shape[0])
    for t in reversed(range(rewards.shape[1])):
        running = rewards[:, t] * mask[:, t] + gamma * running
        G[:, t] = running * mask[:, t]
    return G


def grad_log_softmax(theta_s, a):
    return torch.nn.functional.one_hot(torch.tensor(a), len(theta_s)) - theta_s.softmax(-1)


def gae_1d(rewards, values, gamma, lam):
    A, running = torch.zeros_like(rewards), 0.0
    for t in reversed(range(len(rewards))):
        v_next = values[t + 1] if t + 1 < len(rewards) else 0.0
        running = rewards[t] + gamma * v_next - values[t] + gamma * lam * running
        A[t] = running
    return A


RIGHT = {
    "bellman_backup": bellman_backup,
    "frozen_lake_start_value": 0.59049,
    "td0_update": td0_update,
    "mc_returns": mc_returns,
    "epsilon_greedy_probs": epsilon_greedy_probs,
    "td_targets": td_targets,
    "dqn_target": dqn_target,
    "reward_to_go": reward_to_go,
    "grad_log_softmax": grad_log_softmax,
    "gae": gae_1d,
}

WRONG = {
    "bellman_backup": lambda P, R, done, V, gamma: (P * (R + gamma * V)).sum(-1),  # no done
    "frozen_lake_start_value": 0.9**6,
    "td0_update": lambda V, s, r, s2, done, alpha, gamma: V[s] + alpha * (r + gamma * V[s2] - V[s]),
    "mc_returns": lambda rewards, gamma: list(np.cumsum(rewards)),
    "epsilon_greedy_probs": lambda q, eps: np.eye(len(q))[q.argmax()],
    "td_targets": lambda r, q, a, g, d: (r + g * q[a], r + g * q.max()),  # swapped
    "dqn_target": lambda r, done, q_next, gamma: r + gamma * q_next.max(-1).values,
    "reward_to_go": lambda rewards, mask, gamma: rewards,
    "grad_log_softmax": lambda theta_s, a: theta_s.softmax(-1),
    "gae": lambda r, v, gamma, lam: r - v,
}


def test_every_classic_exercise_is_covered():
    classic = set(RIGHT)
    assert classic <= set(testing.exercises())


@pytest.mark.parametrize("name", sorted(RIGHT))
def test_right_answer_passes(name, capsys):
    assert testing.check(name, RIGHT[name]) is True
    assert "✅" in capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(WRONG))
def test_wrong_answer_fails_with_a_message(name, capsys):
    assert testing.check(name, WRONG[name]) is False
    out = capsys.readouterr().out
    assert "❌" in out and "expected" in out


def test_crash_is_reported_not_raised(capsys):
    assert testing.check("td0_update", lambda *a: 1 / 0) is False
    assert "ZeroDivisionError" in capsys.readouterr().out


def test_unknown_exercise_names_the_choices():
    with pytest.raises(ValueError, match="bellman_backup"):
        testing.check("no_such_exercise", 1)
