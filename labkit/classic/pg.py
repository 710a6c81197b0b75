"""Policy gradient on tabular problems: REINFORCE (reward-to-go, baseline), actor-critic, GAE.

The policy is a table of logits theta [S, A], pi(a|s) = softmax(theta[s]); the critic a table
V_phi [S]. Episodes run B at a time for at most T steps and come back as [B, T] tensors with a
prefix mask, the layout of the LLM labs, so the advantages come from the same functions:
``labkit.core.advantages.discounted_returns`` and ``gae``.

    grad J(theta) = E[ sum_t grad log pi(a_t|s_t) A_t ]        (Williams 1992; Sutton et al. 2000)
    A_t = G_t                      reward-to-go (REINFORCE)
    A_t = G_t - V(s_t)             with a baseline (GAE with lam = 1)
    A_t = sum_l (gamma lam)^l delta_{t+l},  delta_t = r_t + gamma V(s_{t+1}) - V(s_t)   (GAE)

Departure from the exact discounted gradient, as in every practical implementation: the gamma^t
factor in front of each term is dropped (Thomas 2014); with gamma = 1 (the default here) there is
none. The objective is the return of the first T steps. Shape letters: B episodes, T steps,
S states, A actions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from labkit.classic._threads import one_thread
from labkit.classic.envs import TabularMDP
from labkit.core.advantages import discounted_returns, gae

ADVANTAGES = ("reward_to_go", "baseline", "gae")


@dataclass
class Batch:
    """B episodes of at most T steps; mask is 1 on each episode's valid prefix."""

    states: torch.Tensor  # [B, T] long
    actions: torch.Tensor  # [B, T] long
    rewards: torch.Tensor  # [B, T]
    mask: torch.Tensor  # [B, T]
    next_states: torch.Tensor  # [B, T] long, s_{t+1}


def rollout(
    mdp: TabularMDP, logits: torch.Tensor, B: int, T: int, generator: torch.Generator | None = None
) -> Batch:
    """Sample B episodes of pi = softmax(logits) in parallel, cut at T steps.

    >>> from labkit.classic.envs import random_walk
    >>> b = rollout(random_walk(), torch.zeros(7, 2), B=4, T=50, generator=torch.Generator().manual_seed(0))
    >>> b.states.shape, bool(b.states[:, 0].eq(3).all()), bool((b.rewards.sum(1) <= 1).all())
    (torch.Size([4, 50]), True, True)
    """
    P, R = torch.as_tensor(mdp.P, dtype=torch.float32), torch.as_tensor(mdp.R, dtype=torch.float32)
    done = torch.as_tensor(mdp.done, dtype=torch.bool)
    pi = torch.softmax(logits.detach(), -1)  # [S, A]
    s = torch.multinomial(
        torch.as_tensor(mdp.p0, dtype=torch.float32).expand(B, -1), 1, generator=generator
    ).squeeze(1)  # [B]
    alive = torch.ones(B, dtype=torch.bool)  # [B]
    out = {k: [] for k in ("states", "actions", "rewards", "mask", "next_states")}
    for _ in range(T):
        a = torch.multinomial(pi[s], 1, generator=generator).squeeze(1)  # [B]
        s2 = torch.multinomial(P[s, a], 1, generator=generator).squeeze(1)  # [B]
        for k, v in zip(out, (s, a, R[s, a, s2] * alive, alive.float(), s2), strict=True):
            out[k].append(v)
        alive = alive & ~done[s, a, s2]
        s = s2
    return Batch(**{k: torch.stack(v, 1) for k, v in out.items()})


def advantages(
    batch: Batch, kind: str, gamma: float, lam: float = 1.0, V: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """(A [B, T], critic targets [B, T]) for ``kind`` in ADVANTAGES.

    reward_to_go: A_t = G_t (labkit.core discounted_returns); baseline: A_t = G_t - V(s_t);
    gae: GAE(gamma, lam) on the critic V (labkit.core gae), lam = 1 equals "baseline".
    V is a table [S], or [T, S] for a time-dependent V_t(s) (the exact values of a T-step task).
    The critic target is G_t for the first two, A_t + V(s_t) (the lambda-return) for gae.

    >>> b = Batch(torch.tensor([[0, 1]]), torch.tensor([[0, 0]]), torch.tensor([[0., 1.]]),
    ...           torch.ones(1, 2), torch.tensor([[1, 2]]))
    >>> advantages(b, "baseline", 1.0, V=torch.tensor([.5, .5, 0.]))[0]
    tensor([[0.5000, 0.5000]])
    """
    if kind not in ADVANTAGES:
        raise ValueError(f"advantage must be one of {ADVANTAGES}; got {kind!r}")
    G = discounted_returns(batch.rewards, batch.mask, gamma)  # [B, T]
    if kind == "reward_to_go":
        return G, G
    if V is None:
        raise ValueError(f"advantage={kind!r} needs the critic V [S]")
    V = V.detach()
    if V.dim() == 2:  # a time-dependent baseline V_t(s) [T, S], e.g. exact_values
        values = V[torch.arange(batch.states.shape[1]), batch.states]  # [B, T]
    else:
        values = V[batch.states]  # [B, T]
    values = values * batch.mask  # [B, T]
    if kind == "baseline":
        return (G - values) * batch.mask, G
    # The episode ends inside T (terminal, bootstrap 0) or is cut at T: the objective is the
    # return of the first T steps, so nothing is bootstrapped after T either.
    return gae(batch.rewards, values, batch.mask, gamma, lam, next_value=None)


def pg_loss(logits: torch.Tensor, batch: Batch, adv: torch.Tensor) -> tuple[torch.Tensor, dict]:
    """L(theta) = -1/B sum_b sum_t log pi(a_t|s_t) A_t; its gradient estimates -grad J.

    >>> b = Batch(torch.tensor([[0]]), torch.tensor([[1]]), torch.tensor([[1.]]), torch.ones(1, 1),
    ...           torch.tensor([[1]]))
    >>> theta = torch.zeros(2, 2, requires_grad=True)
    >>> loss, _ = pg_loss(theta, b, torch.ones(1, 1)); loss.backward(); theta.grad[0].tolist()
    [0.5, -0.5]
    """
    logp = torch.log_softmax(logits, -1)[batch.states, batch.actions]  # [B, T]
    loss = -(logp * adv.detach() * batch.mask).sum(1).mean()
    pi = torch.softmax(logits.detach(), -1)[batch.states]  # [B, T, A]
    entropy = -(pi * pi.clamp_min(1e-12).log()).sum(-1)  # [B, T]
    n = batch.mask.sum().clamp_min(1)
    return loss, {
        "entropy": ((entropy * batch.mask).sum() / n).item(),
        "adv_mean": ((adv * batch.mask).sum() / n).item(),
    }


@dataclass
class PGConfig:
    """REINFORCE / actor-critic on a tabular softmax policy."""

    advantage: str = "gae"  # one of ADVANTAGES
    iterations: int = 150  # policy updates
    batch_size: int = 32  # B, episodes per update
    horizon: int = 30  # T, steps per episode at most
    gamma: float = 1.0  # discount
    lam: float = 0.95  # GAE lambda (advantage="gae")
    learning_rate: float = 0.1  # Adam on the logits theta
    critic_learning_rate: float = 0.1  # Adam on the critic table V_phi
    seed: int = 0

    def __post_init__(self):
        if self.advantage not in ADVANTAGES:
            raise ValueError(f"advantage must be one of {ADVANTAGES}; got {self.advantage!r}")
        if not 0.0 <= self.gamma <= 1.0 or not 0.0 <= self.lam <= 1.0:
            raise ValueError(f"gamma and lam must be in [0, 1]; got {self.gamma}, {self.lam}")
        for name in ("iterations", "batch_size", "horizon"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1; got {getattr(self, name)}")
        if self.learning_rate <= 0 or self.critic_learning_rate <= 0:
            raise ValueError("learning_rate and critic_learning_rate must be > 0")


@one_thread
def train_pg(
    mdp: TabularMDP,
    cfg: PGConfig,
    callback: Callable[[int, torch.Tensor, torch.Tensor, dict], None] | None = None,
    every: int = 10,
) -> tuple[torch.Tensor, torch.Tensor, dict]:
    """Train the logits theta [S, A] (and the critic V [S] unless reward_to_go).

    Returns (theta, V, stats) with stats["return"] (mean return of each batch), "entropy",
    "critic_loss". ``callback(iteration, theta, V, stats)`` runs every ``every`` iterations.

    >>> from labkit.classic.envs import gridworld
    >>> theta, V, stats = train_pg(gridworld(), PGConfig(iterations=3))
    >>> theta.shape, len(stats["return"])
    (torch.Size([25, 4]), 3)
    """
    torch.manual_seed(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    theta = torch.zeros(mdp.n_states, mdp.n_actions, requires_grad=True)  # [S, A]
    V = torch.zeros(mdp.n_states, requires_grad=True)  # [S]
    opt = torch.optim.Adam([theta], lr=cfg.learning_rate)
    opt_v = torch.optim.Adam([V], lr=cfg.critic_learning_rate)
    stats = {"return": [], "entropy": [], "critic_loss": []}
    for it in range(1, cfg.iterations + 1):
        batch = rollout(mdp, theta, cfg.batch_size, cfg.horizon, gen)
        adv, target = advantages(batch, cfg.advantage, cfg.gamma, cfg.lam, V)
        loss, info = pg_loss(theta, batch, adv)
        opt.zero_grad()
        loss.backward()
        opt.step()
        critic_loss = ((V[batch.states] - target) ** 2 * batch.mask).sum() / batch.mask.sum()
        if cfg.advantage != "reward_to_go":
            opt_v.zero_grad()
            critic_loss.backward()
            opt_v.step()
        stats["return"].append(batch.rewards.sum(1).mean().item())
        stats["entropy"].append(info["entropy"])
        stats["critic_loss"].append(critic_loss.item())
        if callback is not None and (it % every == 0 or it == cfg.iterations):
            callback(it, theta.detach(), V.detach(), stats)
    return theta.detach(), V.detach(), stats
