"""Control without a model: Q-learning (off-policy) and SARSA (on-policy) with epsilon-greedy.

Sutton & Barto (2018) sections 6.4-6.6 and Example 6.6 (CliffWalking); the seed's
"Q-Learning vs SARSA" slide (002). Both update Q(s_t, a_t) toward a one-step target:

    Q-learning:      r_t + gamma max_a' Q(s_{t+1}, a')
    SARSA:           r_t + gamma Q(s_{t+1}, a_{t+1}),  a_{t+1} the action it will actually take
    expected SARSA:  r_t + gamma sum_a' pi(a'|s_{t+1}) Q(s_{t+1}, a')

Shape letters: S states, A actions, N episodes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from labkit.classic.envs import TabularMDP

METHODS = ("q_learning", "sarsa", "expected_sarsa")


@dataclass
class ControlConfig:
    """Tabular TD control; defaults are Sutton & Barto's CliffWalking setting (Example 6.6)."""

    method: str = "q_learning"  # one of METHODS
    episodes: int = 500  # N, number of episodes
    alpha: float = 0.5  # step size
    gamma: float = 1.0  # discount
    epsilon: float = 0.1  # exploration: random action with probability epsilon
    max_steps: int = 10_000  # an episode is cut after this many steps
    seed: int = 0

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}; got {self.method!r}")
        if not 0.0 < self.alpha <= 1.0:
            raise ValueError(f"alpha must be in (0, 1]; got {self.alpha}")
        if not 0.0 <= self.gamma <= 1.0:
            raise ValueError(f"gamma must be in [0, 1]; got {self.gamma}")
        if not 0.0 <= self.epsilon <= 1.0:
            raise ValueError(f"epsilon must be in [0, 1]; got {self.epsilon}")
        if self.episodes < 1 or self.max_steps < 1:
            raise ValueError("episodes and max_steps must be >= 1")


def epsilon_greedy_probs(q: np.ndarray, epsilon: float) -> np.ndarray:
    """pi(a|s) = epsilon / |A| + (1 - epsilon) 1[a = argmax Q(s, .)] (ties share the greedy mass).

    >>> epsilon_greedy_probs(np.array([0., 2., 1., 0.]), 0.1).round(3).tolist()
    [0.025, 0.925, 0.025, 0.025]
    """
    best = q == q.max(-1, keepdims=True)  # [..., A]
    return epsilon / q.shape[-1] + (1 - epsilon) * best / best.sum(-1, keepdims=True)


def epsilon_greedy(q: np.ndarray, epsilon: float, rng: np.random.Generator) -> int:
    """Sample a ~ epsilon-greedy(Q(s, .)); ties between greedy actions are broken at random."""
    if rng.random() < epsilon:
        return int(rng.integers(len(q)))
    best = np.flatnonzero(q == q.max())
    return int(best[rng.integers(len(best))])


def td_target(
    method: str, r: float, q_next: np.ndarray, a_next: int, gamma: float, epsilon: float, done: bool
) -> float:
    """The one-step target of each method (0 bootstrap at a terminal transition).

    >>> q_next = np.array([1., 3.])
    >>> [round(float(td_target(m, -1., q_next, 0, 0.5, 0.2, False)), 6) for m in METHODS]
    [0.5, -0.5, 0.4]
    """
    if done:
        return r
    if method == "q_learning":
        return r + gamma * q_next.max()
    if method == "sarsa":
        return r + gamma * q_next[a_next]
    if method == "expected_sarsa":
        return r + gamma * float(epsilon_greedy_probs(q_next, epsilon) @ q_next)
    raise ValueError(f"method must be one of {METHODS}; got {method!r}")


def td_control(
    mdp: TabularMDP,
    cfg: ControlConfig,
    callback: Callable[[int, np.ndarray, dict], None] | None = None,
    every: int = 10,
) -> tuple[np.ndarray, dict]:
    """Learn Q with cfg.method, acting epsilon-greedily; Q starts at 0.

    Returns (Q [S, A], stats) with stats["returns"] [N] (the undiscounted online return of each
    episode, exploration included) and stats["lengths"] [N]. ``callback(episode, Q, stats)``
    runs every ``every`` episodes (widgets use it to redraw).

    >>> from labkit.classic.envs import cliff_walking
    >>> Q, stats = td_control(cliff_walking(), ControlConfig(episodes=20))
    >>> Q.shape, len(stats["returns"])
    ((48, 4), 20)
    """
    rng = np.random.default_rng(cfg.seed)
    Q = np.zeros((mdp.n_states, mdp.n_actions))  # [S, A]
    stats = {"returns": [], "lengths": []}
    for n in range(cfg.episodes):
        s = mdp.reset(rng)
        a = epsilon_greedy(Q[s], cfg.epsilon, rng)
        G, t = 0.0, 0
        for t in range(1, cfg.max_steps + 1):
            s2, r, done = mdp.step(s, a, rng)
            a2 = epsilon_greedy(Q[s2], cfg.epsilon, rng)  # the action taken next (SARSA's a')
            target = td_target(cfg.method, r, Q[s2], a2, cfg.gamma, cfg.epsilon, done)
            Q[s, a] += cfg.alpha * (target - Q[s, a])
            G += r
            s, a = s2, a2
            if done:
                break
        stats["returns"].append(G)
        stats["lengths"].append(t)
        if callback is not None and ((n + 1) % every == 0 or n + 1 == cfg.episodes):
            callback(n + 1, Q, stats)
    return Q, {k: np.array(v) for k, v in stats.items()}


def greedy_path(mdp: TabularMDP, Q: np.ndarray, max_steps: int = 100) -> list[int]:
    """States visited by the greedy policy argmax_a Q from the most likely start state.

    Follows the most likely next state (the actual one in a deterministic world); stops at a
    terminal state, on a repeat (a loop), or after max_steps.

    >>> from labkit.classic.envs import random_walk
    >>> greedy_path(random_walk(), np.array([[0, 0]] + [[0., 1.]] * 6))
    [3, 4, 5, 6]
    """
    s, path = int(mdp.p0.argmax()), []
    while len(path) <= max_steps and s not in path:
        path.append(s)
        if mdp.terminal[s]:
            break
        s = int(mdp.P[s, int(Q[s].argmax())].argmax())
    return path
