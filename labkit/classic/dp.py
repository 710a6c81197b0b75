"""Dynamic programming on a known model: Bellman backups, value iteration, policy iteration.

Sutton & Barto (2018), chapter 4; the seed's "Bellman Optimality" slide (002). Shape letters:
S states, A actions. Policies are [S, A] probability tables or [S] action indices.
"""

from __future__ import annotations

import numpy as np

from labkit.classic.envs import TabularMDP


def q_from_v(mdp: TabularMDP, V: np.ndarray, gamma: float) -> np.ndarray:
    """One Bellman backup: Q(s,a) = sum_s' P(s'|s,a) [R(s,a,s') + gamma (1 - done) V(s')].

    >>> from labkit.classic.envs import frozen_lake
    >>> m = frozen_lake(); V = np.zeros(16); V[14] = 0.5
    >>> float(q_from_v(m, V, gamma=0.9)[14, 2]), float(q_from_v(m, V, gamma=0.9)[10, 1])
    (1.0, 0.45)
    """
    return mdp.r_sa + gamma * mdp.P_cont @ V  # [S, A]


def as_probs(pi: np.ndarray, n_actions: int) -> np.ndarray:
    """A policy as an [S, A] table of pi(a|s); an [S] vector of actions becomes one-hot."""
    pi = np.asarray(pi)
    return np.eye(n_actions)[pi] if pi.ndim == 1 else pi


def greedy(Q: np.ndarray) -> np.ndarray:
    """pi(s) = argmax_a Q(s, a), ties to the lowest action index. [S, A] -> [S].

    >>> greedy(np.array([[0., 1.], [2., 2.]])).tolist()
    [1, 0]
    """
    return Q.argmax(-1)


def policy_evaluation(mdp: TabularMDP, pi: np.ndarray, gamma: float) -> np.ndarray:
    """Exact V^pi from the linear Bellman system (I - gamma P_pi) V = r_pi.

    P_pi(s'|s) = sum_a pi(a|s) P(s'|s,a) (1 - done), r_pi(s) = sum_a pi(a|s) r(s,a).
    With gamma = 1 the policy must end every episode (else the system is singular).

    >>> from labkit.classic.envs import random_walk
    >>> V = policy_evaluation(random_walk(), np.full((7, 2), 0.5), gamma=1.0)
    >>> np.round(V * 6, 6).tolist()  # Sutton & Barto Example 6.2: V = 1/6 ... 5/6
    [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 0.0]
    """
    pi = as_probs(pi, mdp.n_actions)  # [S, A]
    P_pi = np.einsum("sa,sat->st", pi, mdp.P_cont)  # [S, S]
    r_pi = (pi * mdp.r_sa).sum(-1)  # [S]
    M = np.eye(mdp.n_states) - gamma * P_pi
    if np.linalg.cond(M) > 1e12:
        raise ValueError(
            "policy_evaluation: (I - gamma P_pi) is singular; the policy never "
            "ends some episodes. Use gamma < 1 or a policy that reaches a terminal."
        )
    return np.linalg.solve(M, r_pi)


def value_iteration(
    mdp: TabularMDP, gamma: float, tol: float = 1e-12, max_iter: int = 100_000, record: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """V_{k+1}(s) = max_a sum_s' P(s'|s,a) [R + gamma V_k(s')] until max |V_{k+1} - V_k| < tol.

    Returns (V, Q, greedy policy, stats); stats["sweeps"], and stats["history"] (the V after
    each sweep, [K, S]) when ``record``. For gamma < 1 the error is below gamma tol / (1 - gamma).

    >>> from labkit.classic.envs import frozen_lake
    >>> V, Q, pi, stats = value_iteration(frozen_lake(), gamma=0.9)
    >>> round(float(V[0]), 6), round(0.9 ** 5, 6)  # 6 steps to the goal, reward 1 on the last
    (0.59049, 0.59049)
    """
    _check_gamma(gamma)
    V, history = np.zeros(mdp.n_states), []
    for k in range(1, max_iter + 1):
        Q = q_from_v(mdp, V, gamma)  # [S, A]
        V_new = Q.max(-1)  # [S]
        delta = np.abs(V_new - V).max()
        V = V_new
        if record:
            history.append(V.copy())
        if delta < tol:
            break
    Q = q_from_v(mdp, V, gamma)
    stats = {"sweeps": k, "delta": float(delta)}
    if record:
        stats["history"] = np.array(history)
    return V, Q, greedy(Q), stats


def policy_iteration(
    mdp: TabularMDP, gamma: float, max_iter: int = 1000
) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict]:
    """Evaluate pi exactly, improve it greedily, repeat until the policy is stable.

    pi_{k+1}(s) = argmax_a Q^{pi_k}(s, a); a tie keeps the current action, so it terminates.
    Starts from "always action 0"; with gamma = 1 that policy may never end an episode.

    >>> from labkit.classic.envs import frozen_lake
    >>> V, Q, pi, stats = policy_iteration(frozen_lake(), gamma=0.9)
    >>> round(float(V[0]), 6), stats["iterations"] <= 10
    (0.59049, True)
    """
    _check_gamma(gamma)
    pi = np.zeros(mdp.n_states, dtype=int)
    for k in range(1, max_iter + 1):
        V = policy_evaluation(mdp, pi, gamma)
        Q = q_from_v(mdp, V, gamma)  # [S, A]
        keep = Q[np.arange(mdp.n_states), pi] >= Q.max(-1) - 1e-12  # [S] current is already best
        new_pi = np.where(keep, pi, greedy(Q))
        if (new_pi == pi).all():
            break
        pi = new_pi
    return V, Q, pi, {"iterations": k}


def _check_gamma(gamma: float) -> None:
    if not 0.0 <= gamma <= 1.0:
        raise ValueError(f"gamma must be in [0, 1]; got {gamma}")
