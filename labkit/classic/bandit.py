"""The k-armed bandit: explore vs exploit with one state (Sutton & Barto, chapter 2).

The 10-armed testbed (section 2.3): arm means q*(a) ~ N(0, 1), rewards ~ N(q*(a), 1).
Many independent bandit problems run at once as rows of numpy arrays. Shape letters:
R runs, K arms, T steps.
"""

from __future__ import annotations

import numpy as np

STRATEGIES = ("epsilon_greedy", "ucb")


def bandit_testbed(runs: int = 2000, k: int = 10, seed: int = 0) -> np.ndarray:
    """True arm values q*(a) ~ N(0, 1) for ``runs`` independent problems: [R, K].

    >>> bandit_testbed(runs=3, k=4).shape
    (3, 4)
    """
    return np.random.default_rng(seed).normal(size=(runs, k))


def run_bandit(
    q_star: np.ndarray,
    steps: int = 1000,
    epsilon: float = 0.1,
    strategy: str = "epsilon_greedy",
    c: float = 2.0,
    seed: int = 1,
) -> dict:
    """Sample-average action values Q_{n+1} = Q_n + (R_n - Q_n) / n, with one of two rules.

    epsilon_greedy: A_t = argmax_a Q_t(a), or a random arm with probability epsilon.
    ucb: A_t = argmax_a [Q_t(a) + c sqrt(ln t / N_t(a))] (untried arms first), section 2.7.
    Returns {"reward": [T] mean over runs, "optimal": [T] fraction choosing the best arm}.

    >>> out = run_bandit(bandit_testbed(runs=200), steps=300, epsilon=0.1)
    >>> bool(out["optimal"][-50:].mean() > 0.5)
    True
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {STRATEGIES}; got {strategy!r}")
    if not 0.0 <= epsilon <= 1.0:
        raise ValueError(f"epsilon must be in [0, 1]; got {epsilon}")
    rng = np.random.default_rng(seed)
    R, K = q_star.shape
    Q, N = np.zeros((R, K)), np.zeros((R, K))  # [R, K] estimates, counts
    rows, best = np.arange(R), q_star.argmax(1)  # [R], [R]
    reward, optimal = np.zeros(steps), np.zeros(steps)
    for t in range(steps):
        if strategy == "ucb":
            bonus = c * np.sqrt(np.log(t + 1) / np.maximum(N, 1e-12))  # [R, K], inf-like if untried
            a = np.where(N.min(1) == 0, N.argmin(1), (Q + bonus).argmax(1))  # [R]
        else:
            noise = rng.random((R, K)) * 1e-9  # random tie-breaking among equal estimates
            a = np.where(rng.random(R) < epsilon, rng.integers(K, size=R), (Q + noise).argmax(1))
        r = rng.normal(q_star[rows, a], 1.0)  # [R]
        N[rows, a] += 1
        Q[rows, a] += (r - Q[rows, a]) / N[rows, a]
        reward[t], optimal[t] = r.mean(), (a == best).mean()
    return {"reward": reward, "optimal": optimal}
