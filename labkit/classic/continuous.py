"""Continuous control with a known optimum: steer a point on a line to 0 with a Gaussian policy.

The task (a 1-D linear-quadratic regulator): x_0 ~ U[-1, 1], x_{t+1} = x_t + a_t with a_t real,
reward r_t = -(x_{t+1}^2 + rho a_t^2), T steps. The observation is (x_t, t / T). Its optimum
is known in closed form (finite-horizon Riccati recursion, Bertsekas, "Dynamic Programming and
Optimal Control", sec. 4.1): with p_T = 0,

    a_t* = -k_t x_t,   k_t = (1 + p_{t+1}) / (1 + p_{t+1} + rho),
    p_t = rho (1 + p_{t+1}) / (1 + p_{t+1} + rho),   V_t*(x) = -p_t x^2,

so J* = -p_0 E[x_0^2]. A policy is scored deterministically: its mean action mu(s) run from a
fixed grid of start points (no sampling), against J* on the same grid.

Training is REINFORCE on :class:`~labkit.classic.gaussian.GaussianPolicy` with the advantages of
``labkit.classic.pg`` (reward-to-go, a learned baseline V_phi(s), or GAE), the layout of the LLM
labs: [B, T] tensors, ``labkit.core.advantages``. Shape letters: B episodes, T steps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from labkit.classic._threads import one_thread
from labkit.classic.gaussian import GaussianPolicy, gaussian_entropy
from labkit.classic.pg import ADVANTAGES
from labkit.core.advantages import discounted_returns, gae
from labkit.core.options import choose

START_GRID = torch.linspace(-1.0, 1.0, 101)
"""The start points of the deterministic evaluation (E[x_0^2] over it is ~0.34)."""


def riccati(T: int, rho: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(k [T], p [T + 1]): the optimal gains a_t* = -k_t x_t and values V_t*(x) = -p_t x^2.

    >>> k, p = riccati(1, rho=1.0)  # one step: max_a -((x + a)^2 + a^2) at a = -x / 2
    >>> k.tolist(), p.tolist()
    ([0.5], [0.5, 0.0])
    """
    k, p = torch.zeros(T, dtype=torch.float64), torch.zeros(T + 1, dtype=torch.float64)
    for t in reversed(range(T)):
        k[t] = (1 + p[t + 1]) / (1 + p[t + 1] + rho)
        p[t] = rho * (1 + p[t + 1]) / (1 + p[t + 1] + rho)
    return k, p


def optimal_return(T: int, rho: float, x0: torch.Tensor = START_GRID) -> float:
    """J* = -p_0 mean(x_0^2) over the start points ``x0``.

    >>> round(optimal_return(1, rho=1.0, x0=torch.tensor([1.0, -1.0])), 6)
    -0.5
    """
    return float(-riccati(T, rho)[1][0] * (x0.double() ** 2).mean())


def observe(x: torch.Tensor, t: int, T: int) -> torch.Tensor:
    """The observation (x_t, t / T): [B] -> [B, 2]."""
    return torch.stack([x, torch.full_like(x, t / T)], -1)


def step(x: torch.Tensor, a: torch.Tensor, rho: float) -> tuple[torch.Tensor, torch.Tensor]:
    """x' = x + a, r = -(x'^2 + rho a^2): [B], [B] -> (x' [B], r [B])."""
    x2 = x + a
    return x2, -(x2**2 + rho * a**2)


def mean_policy_return(policy: GaussianPolicy, T: int, rho: float, x0=START_GRID) -> float:
    """The return of the deterministic policy a = mu(s) from each start point, averaged."""
    x, G = x0.clone(), torch.zeros_like(x0)
    with torch.no_grad():
        for t in range(T):
            x, r = step(x, policy(observe(x, t, T))[0][:, 0], rho)
            G += r
    return float(G.mean())


@dataclass
class GaussianPGConfig:
    """REINFORCE / actor-critic with a Gaussian policy on the point-mass task."""

    advantage: str = "baseline"  # one of labkit.classic.pg.ADVANTAGES
    iterations: int = 200  # policy updates
    batch_size: int = 16  # B, episodes per update
    horizon: int = 20  # T
    rho: float = 0.1  # action cost
    gamma: float = 1.0  # discount
    lam: float = 0.95  # GAE lambda (advantage="gae")
    learning_rate: float = 3e-3  # Adam on theta (mean network and log-std)
    critic_learning_rate: float = 1e-2  # Adam on the critic V_phi(s)
    hidden: int = 32  # width of both networks
    log_std: float = -0.5  # initial log sigma
    seed: int = 0

    def __post_init__(self):
        choose("advantage", self.advantage, ADVANTAGES)
        for name in ("iterations", "batch_size", "horizon", "hidden"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1; got {getattr(self, name)}")
        if not 0.0 <= self.gamma <= 1.0 or not 0.0 <= self.lam <= 1.0 or self.rho < 0:
            raise ValueError("need gamma, lam in [0, 1] and rho >= 0")


def rollout(policy: GaussianPolicy, cfg: GaussianPGConfig, gen: torch.Generator):
    """B episodes of T steps: (obs [B, T, 2], actions [B, T, 1], rewards [B, T])."""
    x = torch.rand(cfg.batch_size, generator=gen) * 2 - 1  # [B] x_0 ~ U[-1, 1]
    obs, acts, rews = [], [], []
    for t in range(cfg.horizon):
        s = observe(x, t, cfg.horizon)  # [B, 2]
        a = policy.sample(s, gen)  # [B, 1]
        x, r = step(x, a[:, 0], cfg.rho)
        obs.append(s), acts.append(a), rews.append(r)
    return torch.stack(obs, 1), torch.stack(acts, 1), torch.stack(rews, 1)


def critic(hidden: int) -> torch.nn.Module:
    """V_phi(s): [B, T, 2] -> [B, T, 1]."""
    return torch.nn.Sequential(
        torch.nn.Linear(2, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 1)
    )


def advantage(cfg: GaussianPGConfig, rewards, values) -> tuple[torch.Tensor, torch.Tensor]:
    """(A [B, T], critic target [B, T]) as in ``labkit.classic.pg.advantages``."""
    mask = torch.ones_like(rewards)
    G = discounted_returns(rewards, mask, cfg.gamma)  # [B, T]
    if cfg.advantage == "reward_to_go":
        return G, G
    if cfg.advantage == "baseline":
        return G - values, G
    return gae(rewards, values, mask, cfg.gamma, cfg.lam, next_value=None)


@one_thread
def train_gaussian_pg(
    cfg: GaussianPGConfig, callback: Callable[[int, dict], None] | None = None
) -> tuple[GaussianPolicy, dict]:
    """Train the policy; returns (policy, stats) with, per iteration, "return" (mean sampled
    return of the batch), "eval_return" (:func:`mean_policy_return`), "sigma", "entropy",
    "critic_loss". ``callback(iteration, stats)`` after each.

    >>> pi, st = train_gaussian_pg(GaussianPGConfig(iterations=2, batch_size=4))
    >>> len(st["return"]), st["optimal_return"] < 0
    (2, True)
    """
    torch.manual_seed(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    policy, V = GaussianPolicy(2, 1, cfg.hidden, cfg.log_std), critic(cfg.hidden)
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.learning_rate)
    opt_v = torch.optim.Adam(V.parameters(), lr=cfg.critic_learning_rate)
    stats = {k: [] for k in ("return", "eval_return", "sigma", "entropy", "critic_loss")}
    stats["optimal_return"] = optimal_return(cfg.horizon, cfg.rho)
    for it in range(1, cfg.iterations + 1):
        for k, v in _update(policy, V, (opt, opt_v), cfg, gen=gen).items():
            stats[k].append(v)
        stats["eval_return"].append(mean_policy_return(policy, cfg.horizon, cfg.rho))
        stats["sigma"].append(float(policy.log_std.detach().exp()[0]))
        stats["entropy"].append(float(gaussian_entropy(policy.log_std.detach())))
        if callback is not None:
            callback(it, stats)
    return policy, stats


def _update(policy: GaussianPolicy, V, opts, cfg: GaussianPGConfig, *, gen) -> dict:
    """B episodes, then one step on theta and one on phi: the batch's mean return and the
    critic's loss (NaN for plain REINFORCE, which trains no V_phi)."""
    opt, opt_v = opts
    obs, acts, rews = rollout(policy, cfg, gen)  # [B, T, 2], [B, T, 1], [B, T]
    values = V(obs)[..., 0]  # [B, T]
    adv, target = advantage(cfg, rews, values.detach())  # [B, T], [B, T]
    logp = policy.log_prob(obs.flatten(0, 1), acts.flatten(0, 1)).view_as(rews)  # [B, T]
    loss = -(logp * adv.detach()).sum(1).mean()  # -1/B sum_b sum_t log pi(a_t|s_t) A_t
    opt.zero_grad()
    loss.backward()
    opt.step()
    critic_loss = ((values - target.detach()) ** 2).mean()  # V_phi regressed on the target
    if cfg.advantage == "reward_to_go":
        critic_loss = torch.tensor(float("nan"))
    else:
        opt_v.zero_grad()
        critic_loss.backward()
        opt_v.step()
    return {"return": float(rews.sum(1).mean()), "critic_loss": float(critic_loss.detach())}
