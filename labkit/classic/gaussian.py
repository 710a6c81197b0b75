"""A diagonal Gaussian policy for continuous actions: the mean from a small network, a learned
log-std, and the score function that REINFORCE multiplies by the return.

The seed's policy-based slide (002): discrete actions take a softmax, continuous ones a
Gaussian N(mu, sigma). Williams 1992 (sec. 6, Gaussian units); Schulman et al. 2015 (TRPO) and
Spinning Up's ``MLPGaussianActor`` for the state-independent log-std:

    pi_theta(a|s) = prod_i N(a_i; mu_theta(s)_i, sigma_i^2),   sigma = exp(log_std)
    log pi(a|s)   = -1/2 sum_i [ ((a_i - mu_i) / sigma_i)^2 + 2 log sigma_i + log(2 pi) ]
    H[pi(.|s)]    = sum_i [ log sigma_i + 1/2 log(2 pi e) ]
    grad_mu log pi = (a - mu) / sigma^2,   grad_{log sigma} log pi = ((a - mu) / sigma)^2 - 1

Shape letters: B batch, D action dimensions, O observation dimensions.
"""

from __future__ import annotations

import math

import torch

LOG_2PI = math.log(2 * math.pi)


def gaussian_log_prob(a: torch.Tensor, mu: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """log pi(a|s) of a diagonal Gaussian, summed over the D action dimensions: [B, D] -> [B].

    >>> float(gaussian_log_prob(torch.zeros(1, 1), torch.zeros(1, 1), torch.zeros(1)))
    -0.9189385175704956
    """
    z = (a - mu) / log_std.exp()  # [B, D]
    return -0.5 * (z**2 + 2 * log_std + LOG_2PI).sum(-1)  # [B]


def gaussian_entropy(log_std: torch.Tensor) -> torch.Tensor:
    """H = sum_i (log sigma_i + 1/2 log(2 pi e)); it does not depend on the mean. [D] -> [].

    >>> round(float(gaussian_entropy(torch.zeros(1))), 4)  # 1/2 log(2 pi e)
    1.4189
    """
    return (log_std + 0.5 * (LOG_2PI + 1.0)).sum()


class GaussianPolicy(torch.nn.Module):
    """mu_theta(s): O -> hidden -> hidden -> D (tanh activations, an unbounded linear output),
    and a free log-std [D] (one per action dimension, not a function of s). The last layer
    starts at 0.01 x its default scale, so the first policy is N(~0, sigma_0^2) everywhere.

    >>> pi = GaussianPolicy(2, 1, hidden=8)
    >>> mu, log_std = pi(torch.zeros(3, 2)); mu.shape, log_std.shape
    (torch.Size([3, 1]), torch.Size([1]))
    """

    def __init__(self, obs_dim: int, act_dim: int, hidden: int = 32, log_std: float = -0.5):
        super().__init__()
        self.mu = torch.nn.Sequential(
            torch.nn.Linear(obs_dim, hidden),
            torch.nn.Tanh(),
            torch.nn.Linear(hidden, hidden),
            torch.nn.Tanh(),
            torch.nn.Linear(hidden, act_dim),
        )
        with torch.no_grad():
            self.mu[-1].weight.mul_(0.01)
            self.mu[-1].bias.zero_()
        self.log_std = torch.nn.Parameter(torch.full((act_dim,), float(log_std)))

    def forward(self, s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(mu [B, D], log_std [D])."""
        return self.mu(s), self.log_std

    def sample(self, s: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """a = mu(s) + sigma * eps, eps ~ N(0, I): [B, D] (no gradient: the score function
        carries it, not the sample)."""
        with torch.no_grad():
            mu, log_std = self(s)
            return mu + log_std.exp() * torch.randn(mu.shape, generator=generator)

    def log_prob(self, s: torch.Tensor, a: torch.Tensor) -> torch.Tensor:
        """log pi_theta(a|s): [B]."""
        mu, log_std = self(s)
        return gaussian_log_prob(a, mu, log_std)


def score_function_gradient(
    mu: torch.Tensor,
    log_std: torch.Tensor,
    reward,
    n: int,
    *,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The REINFORCE estimate of grad J, J(mu, log_std) = E_{a ~ N(mu, sigma^2)}[reward(a)],
    from n samples: 1/n sum_k reward(a_k) grad log pi(a_k) (Williams 1992). Returns the
    gradients with respect to mu [D] and log_std [D].

    For reward(a) = -|a - c|^2 the exact gradient is (-2 (mu - c), -2 sigma^2):
    >>> reward, gen = lambda a: -((a - 1.0) ** 2).sum(-1), torch.Generator().manual_seed(0)
    >>> g_mu, g_ls = score_function_gradient(torch.zeros(1), torch.zeros(1), reward, 200_000,
    ...                                      generator=gen)
    >>> round(float(g_mu), 1), round(float(g_ls), 1)
    (2.0, -2.0)
    """
    mu, log_std = mu.detach().requires_grad_(), log_std.detach().requires_grad_()
    with torch.no_grad():
        a = mu + log_std.exp() * torch.randn(n, mu.shape[-1], generator=generator)  # [n, D]
        r = reward(a)  # [n]
    surrogate = (r * gaussian_log_prob(a, mu.expand_as(a), log_std)).mean()
    g_mu, g_log_std = torch.autograd.grad(surrogate, (mu, log_std))
    return g_mu, g_log_std
