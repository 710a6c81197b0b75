"""Prediction: estimate V^pi from sampled episodes with Monte Carlo, TD(0), n-step TD, TD(lambda).

Sutton & Barto (2018) chapters 5-7 and 12; the seed's "MC vs TD" slide (002). Every estimator
reads the same list of episodes and returns the estimate after each episode, [N + 1, S], so
bias and variance can be measured against the exact V^pi on identical data.

Step size: ``alpha=None`` is the sample average alpha = 1 / N(s) (N(s): visits of s so far),
which makes first-visit MC exactly unbiased; a float is a constant alpha. V starts at ``V0``.
Shape letters: S states, N episodes, R independent runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labkit.classic.envs import TabularMDP


@dataclass
class Episode:
    """One episode: states s_0..s_T ([T + 1], s_T terminal or truncated), actions and rewards [T]."""

    states: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    done: bool  # True when s_T is terminal (V(s_T) = 0); False when cut at max_steps


def sample_episode(
    mdp: TabularMDP, pi: np.ndarray, rng: np.random.Generator, max_steps: int = 1000
) -> Episode:
    """Run pi ([S, A] probabilities) from s_0 ~ p0 until the episode ends or max_steps.

    >>> from labkit.classic.envs import random_walk
    >>> ep = sample_episode(random_walk(), np.full((7, 2), 0.5), np.random.default_rng(0))
    >>> int(ep.states[0]), int(ep.states[-1]) in (0, 6), ep.done
    (3, True, True)
    """
    cum = pi.cumsum(-1)  # [S, A]
    s, states, actions, rewards, done = mdp.reset(rng), [], [], [], False
    states.append(s)
    for _ in range(max_steps):
        a = min(int(np.searchsorted(cum[s], rng.random(), side="right")), mdp.n_actions - 1)
        s, r, done = mdp.step(s, a, rng)
        states.append(s)
        actions.append(a)
        rewards.append(r)
        if done:
            break
    return Episode(np.array(states), np.array(actions), np.array(rewards, dtype=float), done)


def _step_size(alpha: float | None, N: np.ndarray, s: int) -> float:
    N[s] += 1
    return 1.0 / N[s] if alpha is None else alpha


def mc_prediction(
    episodes: list[Episode],
    n_states: int,
    gamma: float,
    alpha: float | None = None,
    first_visit: bool = True,
    V0: float = 0.0,
) -> np.ndarray:
    """Monte Carlo: V(s_t) <- V(s_t) + alpha (G_t - V(s_t)), G_t = sum_k gamma^k r_{t+k}.

    Waits for the end of each episode; the target G_t uses no estimate, so it is unbiased.
    Returns V after each episode, [N + 1, S].

    >>> ep = Episode(np.array([1, 2, 3]), np.array([1, 1]), np.array([0., 1.]), True)
    >>> mc_prediction([ep], 4, gamma=0.5)[-1].tolist()
    [0.0, 0.5, 1.0, 0.0]
    """
    V, N, history = np.full(n_states, V0, dtype=float), np.zeros(n_states), []
    history.append(V.copy())
    for ep in episodes:
        G, T = 0.0, len(ep.rewards)
        first = {int(s): t for t, s in reversed(list(enumerate(ep.states[:T])))}
        for t in range(T - 1, -1, -1):
            G = ep.rewards[t] + gamma * G
            s = int(ep.states[t])
            if first_visit and first[s] != t:
                continue
            V[s] += _step_size(alpha, N, s) * (G - V[s])
        history.append(V.copy())
    return np.array(history)


def td0_prediction(
    episodes: list[Episode],
    n_states: int,
    gamma: float,
    alpha: float | None = None,
    V0: float = 0.0,
) -> np.ndarray:
    """TD(0): V(s_t) <- V(s_t) + alpha (r_t + gamma V(s_{t+1}) - V(s_t)), after every step.

    The target bootstraps on the current estimate V(s_{t+1}): biased until V is right, but
    it depends on one reward only, so it varies less. Returns [N + 1, S].

    >>> ep = Episode(np.array([1, 2, 3]), np.array([1, 1]), np.array([0., 1.]), True)
    >>> td0_prediction([ep, ep], 4, gamma=0.5)[-1].tolist()  # V(1) = 0.5 V(2) after 1 pass
    [0.0, 0.25, 1.0, 0.0]
    """
    return nstep_td_prediction(episodes, n_states, gamma, n=1, alpha=alpha, V0=V0)


def nstep_td_prediction(
    episodes: list[Episode],
    n_states: int,
    gamma: float,
    n: int,
    alpha: float | None = None,
    V0: float = 0.0,
) -> np.ndarray:
    """n-step TD: target G_{t:t+n} = r_t + ... + gamma^{n-1} r_{t+n-1} + gamma^n V(s_{t+n}).

    n = 1 is TD(0); n >= the episode length is every-visit MC. Sutton & Barto, section 7.1.

    >>> ep = Episode(np.array([1, 2, 3]), np.array([1, 1]), np.array([0., 1.]), True)
    >>> nstep_td_prediction([ep], 4, gamma=0.5, n=2)[-1].tolist()
    [0.0, 0.5, 1.0, 0.0]
    """
    if n < 1:
        raise ValueError(f"n must be >= 1; got {n}")
    V, N, history = np.full(n_states, V0, dtype=float), np.zeros(n_states), []
    history.append(V.copy())
    for ep in episodes:
        T = len(ep.rewards)
        for t in range(T):  # update s_t once r_{t..t+n-1} and s_{t+n} are seen (online order)
            end = min(t + n, T)
            G = sum(gamma ** (k - t) * ep.rewards[k] for k in range(t, end))
            if end < T or not ep.done:
                G += gamma ** (end - t) * V[int(ep.states[end])]
            s = int(ep.states[t])
            V[s] += _step_size(alpha, N, s) * (G - V[s])
        history.append(V.copy())
    return np.array(history)


def td_lambda_prediction(
    episodes: list[Episode],
    n_states: int,
    gamma: float,
    lam: float,
    alpha: float | None = None,
    V0: float = 0.0,
) -> np.ndarray:
    """TD(lambda), backward view with accumulating eligibility traces (Sutton & Barto 12.2).

    delta_t = r_t + gamma V(s_{t+1}) - V(s_t); e <- gamma lam e, e(s_t) += 1; V += alpha delta e.
    lam = 0 is TD(0); lam = 1 approaches every-visit MC. With ``alpha=None`` each state uses
    1 / N(s).

    >>> ep = Episode(np.array([1, 2, 3]), np.array([1, 1]), np.array([0., 1.]), True)
    >>> td_lambda_prediction([ep], 4, gamma=0.5, lam=1.0, alpha=1.0)[-1].tolist()
    [0.0, 0.5, 1.0, 0.0]
    """
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam must be in [0, 1]; got {lam}")
    V, N, history = np.full(n_states, V0, dtype=float), np.zeros(n_states), []
    history.append(V.copy())
    for ep in episodes:
        e = np.zeros(n_states)  # [S] eligibility traces
        T = len(ep.rewards)
        for t in range(T):
            s, s2 = int(ep.states[t]), int(ep.states[t + 1])
            boot = 0.0 if (t == T - 1 and ep.done) else V[s2]
            delta = ep.rewards[t] + gamma * boot - V[s]
            e *= gamma * lam
            e[s] += 1.0
            N[s] += 1
            step = 1.0 / np.maximum(N, 1) if alpha is None else alpha  # [S] or scalar
            V += step * delta * e
        history.append(V.copy())
    return np.array(history)


def estimators(
    n_states: int,
    gamma: float,
    alpha: float | None = None,
    n: int = 3,
    lam: float = 0.5,
    V0: float = 0.0,
) -> dict:
    """The four estimators as ``name -> fn(episodes) -> [N + 1, S]``, same gamma, alpha, V0."""
    kw = {"n_states": n_states, "gamma": gamma, "alpha": alpha, "V0": V0}
    return {
        "MC": lambda eps: mc_prediction(eps, **kw),
        "TD(0)": lambda eps: td0_prediction(eps, **kw),
        f"{n}-step TD": lambda eps: nstep_td_prediction(eps, n=n, **kw),
        f"TD(λ={lam})": lambda eps: td_lambda_prediction(eps, lam=lam, **kw),
    }


def bias_variance(
    mdp: TabularMDP,
    pi: np.ndarray,
    V_true: np.ndarray,
    methods: dict,
    runs: int = 200,
    episodes: int = 50,
    seed: int = 0,
) -> dict[str, dict]:
    """Bias and variance of each estimator against the exact V^pi, over independent runs.

    Each run samples ``episodes`` episodes once and gives the same list to every method. After
    k episodes, for each state s: bias_k(s) = mean_runs V_k(s) - V^pi(s), var_k(s) = var_runs
    V_k(s), over the runs in which s has been visited (an unvisited state still holds V0 and
    says nothing about the estimator). The curves average over non-terminal reachable states.
    Returns ``{name: {"bias2", "var", "mse": [N + 1], "bias_s", "var_s": [N + 1, S]}}``.

    >>> from labkit.classic.envs import random_walk
    >>> m = random_walk(); pi = np.full((7, 2), 0.5); V = np.arange(7) / 6 * (~m.terminal)
    >>> out = bias_variance(m, pi, V, estimators(7, 1.0), runs=20, episodes=5)
    >>> sorted(out), out["MC"]["var"].shape
    (['3-step TD', 'MC', 'TD(0)', 'TD(λ=0.5)'], (6,))
    """
    rng = np.random.default_rng(seed)
    est = {name: [] for name in methods}
    seen = []
    for _ in range(runs):
        eps = [sample_episode(mdp, pi, rng) for _ in range(episodes)]
        for name, fn in methods.items():
            est[name].append(fn(eps))
        seen.append(_visited(eps, mdp.n_states))
    seen = np.array(seen)  # [R, N + 1, S]
    states = ~mdp.terminal & mdp.reachable  # [S]
    return {name: _moments(np.array(H), seen, V_true, states) for name, H in est.items()}


def _visited(episodes: list[Episode], n_states: int) -> np.ndarray:
    """[N + 1, S] bool: state s was visited in one of the first k episodes."""
    seen = np.zeros((len(episodes) + 1, n_states), dtype=bool)
    for k, ep in enumerate(episodes, start=1):
        seen[k] = seen[k - 1]
        seen[k, ep.states[:-1]] = True
    return seen


def _moments(H: np.ndarray, seen: np.ndarray, V_true: np.ndarray, states: np.ndarray) -> dict:
    n = seen.sum(0)  # [N + 1, S] runs in which s was visited by episode k
    mean = (H * seen).sum(0) / np.maximum(n, 1)  # [N + 1, S]
    var = (((H - mean) ** 2) * seen).sum(0) / np.maximum(n - 1, 1)  # [N + 1, S]
    bias = mean - V_true  # [N + 1, S]
    ok = (n >= 2) & states  # [N + 1, S] enough runs to measure
    avg = lambda x: np.where(ok, x, 0).sum(1) / np.maximum(ok.sum(1), 1)
    return {
        "bias2": avg(bias**2),
        "var": avg(var),
        "mse": avg(bias**2 + var),
        "bias_s": np.where(ok, bias, np.nan),
        "var_s": np.where(ok, var, np.nan),
        "n": n,
    }
