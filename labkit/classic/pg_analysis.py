"""Exact policy gradients of a tabular problem, and the bias and variance of their estimates.

On a known MDP the T-step objective J(theta) = sum_{t<T} gamma^t E[r_t] is a differentiable
function of the logits (push the state distribution forward T times), so autograd gives the
exact gradient. Every sampled estimator (REINFORCE, baseline, GAE with any lambda) can then be
measured: bias = mean estimate - exact gradient, variance = trace of the covariance of the
per-episode estimate. Shape letters: N episodes, T steps, S states, A actions.
"""

from __future__ import annotations

import torch

from labkit.classic._threads import one_thread
from labkit.classic.envs import TabularMDP
from labkit.classic.pg import Batch, advantages, rollout


def _tables(mdp: TabularMDP):
    P_cont = torch.as_tensor(mdp.P_cont, dtype=torch.float64)  # [S, A, S]
    r_sa = torch.as_tensor(mdp.r_sa, dtype=torch.float64)  # [S, A]
    return P_cont, r_sa


def exact_objective(mdp: TabularMDP, logits: torch.Tensor, gamma: float, T: int) -> torch.Tensor:
    """J(theta) = sum_{t<T} gamma^t sum_s d_t(s) sum_a pi(a|s) r(s, a), differentiable.

    d_0 = p0, d_{t+1}(s') = sum_{s,a} d_t(s) pi(a|s) P(s'|s,a) (1 - done): the probability of
    being in s' with the episode still running.

    >>> from labkit.classic.envs import random_walk
    >>> round(exact_objective(random_walk(), torch.zeros(7, 2), 1.0, T=1000).item(), 6)
    0.5
    """
    P_cont, r_sa = _tables(mdp)
    pi = torch.softmax(logits.double(), -1)  # [S, A]
    d = torch.as_tensor(mdp.p0, dtype=torch.float64)  # [S]
    J = torch.zeros((), dtype=torch.float64)
    for t in range(T):
        J = J + gamma**t * (d[:, None] * pi * r_sa).sum()
        d = torch.einsum("s,sa,sat->t", d, pi, P_cont)  # [S]
    return J


def exact_values(mdp: TabularMDP, logits: torch.Tensor, gamma: float, T: int) -> torch.Tensor:
    """V_t(s): expected return of the remaining T - t steps from s at step t. [T, S].

    Backward: V_T = 0, V_t(s) = sum_a pi(a|s) [r(s,a) + gamma sum_s' P_cont(s'|s,a) V_{t+1}(s')].
    The best state baseline for the T-step objective is (close to) this.

    >>> from labkit.classic.envs import random_walk
    >>> (exact_values(random_walk(), torch.zeros(7, 2), 1.0, T=2000)[0] * 6).round().tolist()
    [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 0.0]
    """
    P_cont, r_sa = _tables(mdp)
    pi = torch.softmax(logits.detach().double(), -1)  # [S, A]
    V = torch.zeros(T + 1, mdp.n_states, dtype=torch.float64)  # [T + 1, S]
    for t in reversed(range(T)):
        V[t] = (pi * (r_sa + gamma * P_cont @ V[t + 1])).sum(-1)
    return V[:T].float()


def exact_gradient(mdp: TabularMDP, logits: torch.Tensor, gamma: float, T: int) -> torch.Tensor:
    """grad_theta J(theta), [S, A], by autograd through :func:`exact_objective`."""
    theta = logits.detach().double().requires_grad_(True)
    (g,) = torch.autograd.grad(exact_objective(mdp, theta, gamma, T), theta)
    return g.float()


def per_episode_gradients(logits: torch.Tensor, batch: Batch, adv: torch.Tensor) -> torch.Tensor:
    """g_n = sum_t grad log pi(a_t|s_t) A_t for each episode, [N, S, A] (torch.func.vmap).

    The mean over episodes is the usual batch estimate of grad J (minus pg_loss's gradient).
    """

    def one(theta, s, a, A, m):
        return (torch.log_softmax(theta, -1)[s, a] * A * m).sum()

    grad = torch.func.vmap(torch.func.grad(one), in_dims=(None, 0, 0, 0, 0))
    return grad(logits.detach(), batch.states, batch.actions, adv.detach(), batch.mask)


def estimator_stats(grads: torch.Tensor, exact: torch.Tensor) -> dict:
    """Bias and variance of the per-episode gradient estimate against the exact gradient.

    bias2 = ||mean_n g_n - grad J||^2, var = trace Cov(g) = E||g - mean g||^2 (per episode; a
    batch of B episodes has var / B), se2 = var / N, the part of bias2 expected from noise alone.

    >>> g = torch.tensor([[[1., 0.]], [[3., 0.]]])  # two episodes, S = 1, A = 2
    >>> {k: round(v, 3) for k, v in estimator_stats(g, torch.tensor([[2., 0.]])).items()}
    {'bias2': 0.0, 'var': 2.0, 'se2': 1.0, 'norm2': 4.0}
    """
    N = grads.shape[0]
    mean = grads.mean(0)  # [S, A]
    var = ((grads - mean) ** 2).sum((1, 2)).sum() / max(N - 1, 1)
    return {
        "bias2": ((mean - exact) ** 2).sum().item(),
        "var": var.item(),
        "se2": var.item() / N,
        "norm2": (exact**2).sum().item(),
    }


@one_thread
def gradient_variance(
    mdp: TabularMDP,
    logits: torch.Tensor,
    kinds: dict,
    n_episodes: int = 2000,
    T: int = 30,
    gamma: float = 1.0,
    seed: int = 0,
) -> dict[str, dict]:
    """Bias and variance of several advantage choices on the same N episodes.

    kinds: ``name -> (kind, lam, V or None)``, e.g. {"REINFORCE": ("reward_to_go", 1, None),
    "baseline V": ("baseline", 1, V)}; V [S] or [T, S] is any critic; ``"exact"`` uses
    V_t(s) of :func:`exact_values`. Returns ``name -> estimator_stats``.

    >>> from labkit.classic.envs import random_walk
    >>> out = gradient_variance(random_walk(), torch.zeros(7, 2), {"REINFORCE":
    ...     ("reward_to_go", 1.0, None), "baseline": ("baseline", 1.0, "exact")}, 2000, T=100)
    >>> out["baseline"]["var"] < out["REINFORCE"]["var"]
    True
    """
    batch = rollout(mdp, logits, n_episodes, T, torch.Generator().manual_seed(seed))
    exact = exact_gradient(mdp, logits, gamma, T)
    out = {}
    for name, (kind, lam, V) in kinds.items():
        if isinstance(V, str) and V == "exact":
            V = exact_values(mdp, logits, gamma, T)  # [T, S]
        adv, _ = advantages(batch, kind, gamma, lam, V)
        out[name] = estimator_stats(per_episode_gradients(logits, batch, adv), exact)
    return out


def gae_lambda_sweep(
    mdp: TabularMDP,
    logits: torch.Tensor,
    V: torch.Tensor,
    lams: list[float],
    n_episodes: int = 2000,
    T: int = 30,
    gamma: float = 1.0,
    seed: int = 0,
) -> dict[float, dict]:
    """Bias and variance of the GAE(gamma, lam) gradient for each lam, with the critic V [S].

    With an imperfect critic, small lam is biased (it trusts V) and large lam is noisy.
    """
    kinds = {lam: ("gae", lam, V) for lam in lams}
    return gradient_variance(mdp, logits, kinds, n_episodes, T, gamma, seed)
