"""Overestimation made visible: a small MDP where the max over noisy estimates is biased.

Q-learning and DQN bootstrap from max_a' Q_hat(s', a'). Each Q_hat(s', a') may be unbiased, yet
E[max_a Q_hat(s', a)] >= max_a E[Q_hat(s', a)] = V*(s') (Jensen: max is convex), and the excess
flows back through every bootstrapped target: the maximization bias (Sutton & Barto 2018,
Example 6.7; van Hasselt 2010, Double Q-learning; van Hasselt, Guez & Silver 2016, Double DQN,
arXiv 1509.06461, where DQN's estimates on Atari sit far above the true returns).

:func:`maximization_bias` is Sutton & Barto's Example 6.7 stretched into a chain: from A, "right"
ends the episode with reward 0; every other action goes "left" into B_1 -> ... -> B_L, where
each of the many actions pays a Gaussian reward N(mean, sigma^2), mean < 0. Going left is worse
(Q*(A, left) < 0 = Q*(A, right)), but the max over the noisy B estimates makes it look better.
The model's tables hold the mean rewards, so value iteration gives the exact Q* and V* to
measure the bias against.

:func:`max_bias` is the same effect without an MDP: the max of sample means against the double
estimator of van Hasselt 2010, which picks the action with one half of the samples and values
it with the other, so the choice and the value have independent errors. Double DQN stands in
theta^- for the second half; theta^- is a lagged copy of theta fitted to the same replay
samples, so its errors are not independent of theta's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from labkit.classic.envs import TabularMDP


@dataclass
class NoisyRewardMDP(TabularMDP):
    """A TabularMDP whose sampled reward adds zero-mean Gaussian noise of sd ``sigma[s, a]``.

    The tables (P, R) keep the means, so dynamic programming on them is exact for the noisy MDP;
    only :meth:`step` (what an agent sees) draws the noise.
    """

    sigma: np.ndarray | None = None  # [S, A]; None: no noise

    def step(self, s: int, a: int, rng: np.random.Generator) -> tuple[int, float, bool]:
        s2, r, done = super().step(s, a, rng)
        if self.sigma is not None and self.sigma[s, a] > 0:
            r += float(self.sigma[s, a]) * float(rng.standard_normal())
        return s2, r, done


def maximization_bias(
    n_actions: int = 10, length: int = 1, mean: float = -0.1, sigma: float = 1.0
) -> NoisyRewardMDP:
    """Sutton & Barto's Example 6.7 as a chain: A, then B_1 ... B_L, then the terminal T.

    In A, action 0 ("right") ends the episode with reward 0, actions 1.. go to B_1 with reward 0;
    in B_i every action goes on with reward N(mean, sigma^2). ``length=1`` is the book's MDP
    (n_actions in B; here A has as many, all but one meaning "left").

    >>> m = maximization_bias(n_actions=4, length=2)
    >>> m.labels, m.n_actions, float(m.r_sa[1, 3]), m.terminal.nonzero()[0].tolist()
    (('A', 'B1', 'B2', 'T'), 4, -0.1, [3])
    """
    if n_actions < 2 or length < 1 or sigma < 0:
        raise ValueError("need n_actions >= 2, length >= 1, sigma >= 0")
    S, T = length + 2, length + 1
    P, R, done = (np.zeros((S, n_actions, S)) for _ in range(3))
    sd = np.zeros((S, n_actions))
    P[0, 0, T], done[0, 0, T] = 1.0, 1.0  # right: the episode ends, reward 0
    P[0, 1:, 1] = 1.0  # left: into B_1, reward 0
    for i in range(1, T):
        P[i, :, i + 1], R[i, :, i + 1], sd[i] = 1.0, mean, sigma
        done[i, :, i + 1] = float(i + 1 == T)
    P[T, :, T], done[T, :, T] = 1.0, 1.0
    p0 = np.eye(S)[0]
    labels = ("A", *(f"B{i}" for i in range(1, T)), "T")
    return NoisyRewardMDP(
        P,
        R,
        done,
        p0,
        shape=(1, S),
        arrows=("→",) + ("←",) * (n_actions - 1),
        labels=labels,
        name=f"maximization_bias_{length}",
        sigma=sd,
    )


def goes_left(Q: np.ndarray) -> bool:
    """Whether the greedy action in A is "left" (any action but 0): the wrong choice.

    >>> goes_left(np.array([[0.0, 0.2, -0.3]])), goes_left(np.array([[0.1, 0.0, -0.3]]))
    (True, False)
    """
    return bool(Q[0].argmax() != 0)


def max_bias(
    means: np.ndarray, sigma: float, n: int, *, trials: int = 10_000, rng=None
) -> dict[str, float]:
    """E[estimate] - max_a mu_a of two estimates of max_a mu_a from ``n`` samples
    N(mu_a, sigma^2) of each action, by Monte Carlo over ``trials``:

        single  max_a mean_a                      (Q-learning's and DQN's max; biased up)
        double  mean^B_{a*}, a* = argmax_a mean^A_a  (van Hasselt 2010, Double Q-learning)

    where mean^A, mean^B are the means of two halves of the samples. With all means equal the
    single estimator's bias is the expected max of |A| normals (2 actions: s / sqrt(pi), s =
    sigma / sqrt(n)) and the double estimator's is 0; in general it is <= 0 (van Hasselt 2010,
    sec. 2). means: [A].

    >>> b = max_bias(np.zeros(2), sigma=1.0, n=4, rng=np.random.default_rng(0))
    >>> round(b["single"], 1), round(b["double"], 1)  # 0.5 / sqrt(pi) = 0.28
    (0.3, 0.0)
    """
    rng = rng or np.random.default_rng(0)
    mu = np.asarray(means, dtype=float)  # [A]
    half = sigma / np.sqrt(n / 2)  # the sd of a half's mean
    mean_a = mu + half * rng.standard_normal((trials, len(mu)))  # [trials, A]
    mean_b = mu + half * rng.standard_normal((trials, len(mu)))  # [trials, A]
    single = ((mean_a + mean_b) / 2).max(-1)  # [trials]: the max of the full means
    pick = mean_a.argmax(-1)  # [trials]
    double = mean_b[np.arange(trials), pick]  # [trials]
    return {"single": float(single.mean() - mu.max()), "double": float(double.mean() - mu.max())}
