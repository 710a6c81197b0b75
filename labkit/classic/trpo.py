"""PG -> TRPO -> PPO on a tabular softmax policy: four ways to take one policy update from the
same batch, each update measured (its KL to pi_old, the exact return J before and after).

The policy and critic are ``labkit.classic.pg``'s (logits theta [S, A], a table V [S], GAE
advantages); what changes is the update of theta from one batch, the surrogate

    L(theta) = 1/B sum_b sum_t rho_{b,t} A_{b,t},   rho = pi_theta(a_t|s_t) / pi_old(a_t|s_t)

(its gradient at theta_old is the policy gradient of ``pg_loss``) and the mean KL over the
batch's states, KL_bar = mean_{b,t} KL(pi_old(.|s_t) || pi_theta(.|s_t)), exact here:

    pg        theta <- theta + eta grad L                      steepest ascent (Williams 1992)
    trpo      max L  s.t.  KL_bar <= delta: natural gradient by CG, line search (1502.05477)
    ppo_clip  K epochs of Adam on -E[min(rho A, clip(rho, 1 - eps, 1 + eps) A)] (1707.06347)
    ppo_kl    K epochs of Adam on -(L - beta KL_bar), then beta by d = KL_bar vs d_targ (sec. 4)

Departures, and why: PPO's K epochs run on the whole batch, not minibatches (a tabular batch
is small); "pg" is plain gradient ascent with a fixed step eta (not Adam), the textbook update
TRPO improves on. ``passes`` counts backward passes per update (a Fisher-vector product is
one), ``forwards`` TRPO's line-search evaluations: the compute each rule spends. Shape letters:
B episodes, T steps, S states, A actions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from labkit.classic._threads import one_thread
from labkit.classic.envs import TabularMDP
from labkit.classic.pg import Batch, advantages, rollout
from labkit.classic.pg_analysis import exact_objective
from labkit.core.kl import kl_exact
from labkit.core.kl_control import adaptive_kl_beta
from labkit.core.surrogate import clipped_surrogate
from labkit.core.trust_region import (
    conjugate_gradient,
    fisher_vector_product,
    flat_grad,
    line_search,
    natural_step,
)

METHODS = ("pg", "trpo", "ppo_clip", "ppo_kl")
KL_CONTROLLERS = ("adaptive", "fixed")


@dataclass
class TrustRegionConfig:
    """One policy-update rule (``method``) on a tabular softmax policy with a GAE critic."""

    method: str = "trpo"  # one of METHODS
    iterations: int = 60  # policy updates, one batch each
    batch_size: int = 16  # B, episodes per batch
    horizon: int = 30  # T, steps per episode at most
    gamma: float = 1.0  # discount
    lam: float = 0.95  # GAE lambda
    learning_rate: float = 1.0  # eta: pg's step size; ppo_*: Adam's learning rate
    epochs: int = 10  # K, PPO's passes over each batch
    epsilon: float = 0.2  # PPO-clip's clip range
    delta: float = 0.01  # TRPO's KL bound
    cg_iters: int = 10  # conjugate-gradient iterations (TRPO appendix C: 10)
    damping: float = 1e-2  # F + damping I in CG (F is singular on unvisited states)
    backtrack_coef: float = 0.5  # line-search shrink factor
    max_backtracks: int = 10
    beta: float = 1.0  # PPO-KL's initial beta
    d_targ: float = 0.01  # PPO-KL's KL target
    kl_controller: str = "adaptive"  # PPO-KL's beta: "adaptive" (PPO sec. 4) or "fixed"
    critic_learning_rate: float = 0.1  # Adam on V
    seed: int = 0

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"method={self.method!r} is not one of {METHODS}; pick one of those")
        if self.kl_controller not in KL_CONTROLLERS:
            raise ValueError(
                f"kl_controller={self.kl_controller!r} is not one of {KL_CONTROLLERS}; pick one"
            )
        for name in ("iterations", "batch_size", "horizon", "epochs", "cg_iters"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)}: use 1 or more")
        for name in ("learning_rate", "epsilon", "delta", "beta", "d_targ", "critic_learning_rate"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name}={getattr(self, name)}: use a value > 0")
        if not 0 < self.backtrack_coef < 1:
            raise ValueError(f"backtrack_coef={self.backtrack_coef}: use a value in (0, 1)")
        if not 0 <= self.gamma <= 1 or not 0 <= self.lam <= 1:
            raise ValueError(f"gamma={self.gamma}, lam={self.lam}: both must be in [0, 1]")


def surrogate(theta: torch.Tensor, old: torch.Tensor, batch: Batch, adv: torch.Tensor):
    """(L, KL_bar): L = 1/B sum_{b,t} rho A (mask), KL_bar = mean over valid (b, t) of the exact
    KL(pi_old(.|s_t) || pi_theta(.|s_t)); ``old`` the logits theta_old [S, A].

    >>> b = Batch(torch.tensor([[0]]), torch.tensor([[1]]), torch.ones(1, 1), torch.ones(1, 1),
    ...           torch.tensor([[1]]))
    >>> L, kl = surrogate(torch.zeros(2, 2), torch.zeros(2, 2), b, torch.ones(1, 1))
    >>> float(L), float(kl)                                     # rho = 1, theta = theta_old
    (1.0, 0.0)
    """
    s, a, m = batch.states, batch.actions, batch.mask  # [B, T]
    logp = torch.log_softmax(theta, -1)[s, a]  # [B, T]
    old_logp = torch.log_softmax(old, -1)[s, a]  # [B, T]
    rho = torch.exp(logp - old_logp)  # [B, T]
    L = (rho * adv * m).sum(1).mean()
    kl = (kl_exact(old[s], theta[s]) * m).sum() / m.sum().clamp(min=1)  # [B, T] -> []
    return L, kl


def trpo_update(theta: torch.Tensor, batch: Batch, adv: torch.Tensor, cfg: TrustRegionConfig):
    """theta_old + f s: the natural-gradient step s = sqrt(2 delta / x^T F x) x, x = F^{-1} g by
    CG on Fisher-vector products of KL_bar, f from the line search. Returns (theta, stats)."""
    old = theta.detach().clone()
    th = old.clone().requires_grad_(True)  # [S, A]
    L0, kl = surrogate(th, old, batch, adv)
    g = flat_grad(L0, [th], retain_graph=True)  # [S A]
    grad_kl = flat_grad(kl, [th], create_graph=True)  # 0 at theta_old, its Jacobian is F
    Fvp = lambda v: fisher_vector_product(grad_kl, [th], v, damping=cfg.damping)
    x, cg = conjugate_gradient(Fvp, g, iters=cfg.cg_iters)
    s, step = natural_step(x, Fvp(x), g, cfg.delta)
    s = s.view_as(old).detach()

    @torch.no_grad()
    def evaluate(f: float):
        L, kl_f = surrogate(old + f * s, old, batch, adv)
        return float(L - L0), float(kl_f)

    f, ls = line_search(
        evaluate,
        float(step["trpo/expected_improve"]),
        delta=cfg.delta,
        backtrack_coef=cfg.backtrack_coef,
        max_backtracks=cfg.max_backtracks,
    )
    stats = {**ls, "cg_iters": cg["cg/iters"], "passes": 2 + cg["cg/iters"] + 1}
    return old + f * s, {
        **stats,
        "forwards": min(ls["trpo/backtracks"] + 1, cfg.max_backtracks + 1),
    }


def ppo_update(theta, opt, batch: Batch, adv: torch.Tensor, cfg: TrustRegionConfig, beta: float):
    """K epochs of Adam on PPO-clip's loss (``method="ppo_clip"``) or on -(L - beta KL_bar)
    (``"ppo_kl"``), from the same theta_old. Returns the stats of the last epoch."""
    old = theta.detach().clone()
    for _ in range(cfg.epochs):
        if cfg.method == "ppo_clip":
            s, a, m = batch.states, batch.actions, batch.mask
            logp = torch.log_softmax(theta, -1)[s, a]  # [B, T]
            rho = torch.exp(logp - torch.log_softmax(old, -1)[s, a])  # [B, T]
            per_step, _ = clipped_surrogate(rho, adv, logp, m, epsilon=cfg.epsilon)  # [B, T]
            loss = (per_step * m).sum(1).mean()
        else:
            L, kl = surrogate(theta, old, batch, adv)
            loss = -(L - beta * kl)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {"passes": cfg.epochs}


def pg_update(theta: torch.Tensor, batch: Batch, adv: torch.Tensor, cfg: TrustRegionConfig):
    """One step of gradient ascent on L: theta + eta grad L (at theta_old, grad L = the policy
    gradient)."""
    old = theta.detach().clone()
    th = old.clone().requires_grad_(True)
    L, _ = surrogate(th, old, batch, adv)
    return old + cfg.learning_rate * flat_grad(L, [th]).view_as(old), {"passes": 1}


def update(theta, opt, batch: Batch, adv: torch.Tensor, cfg: TrustRegionConfig, beta: float):
    """``cfg.method``'s update of the leaf ``theta`` [S, A] from one batch, in place; its stats
    with ``kl`` (exact KL_bar to theta_old after the update) and ``kl_max`` (over the batch's
    states)."""
    old = theta.detach().clone()
    if cfg.method in ("ppo_clip", "ppo_kl"):
        stats = ppo_update(theta, opt, batch, adv, cfg, beta)
    else:
        rule = trpo_update if cfg.method == "trpo" else pg_update
        new, stats = rule(theta, batch, adv, cfg)
        with torch.no_grad():
            theta.copy_(new)
    with torch.no_grad():
        per_state = kl_exact(old[batch.states], theta[batch.states])  # [B, T]
        m = batch.mask
        stats["kl"] = float((per_state * m).sum() / m.sum().clamp(min=1))
        stats["kl_max"] = float((per_state * m).max())
    return stats


@one_thread
def train_trust_region(
    mdp: TabularMDP,
    cfg: TrustRegionConfig,
    callback: Callable[[int, dict], None] | None = None,
) -> tuple[torch.Tensor, list[dict]]:
    """Train the logits theta [S, A] with ``cfg.method``; returns (theta, one dict per update):
    ``return`` (the batch's mean return), ``J`` and ``J_before`` (the exact T-step return after
    and before the update, ``labkit.classic.pg_analysis.exact_objective``), ``kl``, ``kl_max``,
    ``beta`` (PPO-KL's, the one this update used), ``passes`` and TRPO's line-search stats.
    ``callback(iteration, record)`` after each update.

    >>> from labkit.classic.envs import gridworld
    >>> theta, recs = train_trust_region(gridworld(), TrustRegionConfig(iterations=2))
    >>> theta.shape, len(recs), recs[0]["kl"] <= 0.01
    (torch.Size([25, 4]), 2, True)
    """
    torch.manual_seed(cfg.seed)
    gen = torch.Generator().manual_seed(cfg.seed)
    theta = torch.zeros(mdp.n_states, mdp.n_actions, requires_grad=True)  # [S, A]
    V = torch.zeros(mdp.n_states, requires_grad=True)  # [S]
    opt = torch.optim.Adam([theta], lr=cfg.learning_rate)
    opt_v = torch.optim.Adam([V], lr=cfg.critic_learning_rate)
    beta, records = cfg.beta, []
    J = float(exact_objective(mdp, theta.detach(), cfg.gamma, cfg.horizon))
    for it in range(1, cfg.iterations + 1):
        batch = rollout(mdp, theta, cfg.batch_size, cfg.horizon, gen)
        adv, target = advantages(batch, "gae", cfg.gamma, cfg.lam, V)
        stats = update(theta, opt, batch, adv.detach(), cfg, beta)
        critic_loss = ((V[batch.states] - target) ** 2 * batch.mask).sum() / batch.mask.sum()
        opt_v.zero_grad()
        critic_loss.backward()
        opt_v.step()
        J_before, J = J, float(exact_objective(mdp, theta.detach(), cfg.gamma, cfg.horizon))
        rec = {"iteration": it, "return": float(batch.rewards.sum(1).mean()), "J": J}
        records.append({**rec, "J_before": J_before, "beta": beta, **stats})
        if cfg.method == "ppo_kl" and cfg.kl_controller == "adaptive":  # next beta (PPO sec. 4)
            beta = adaptive_kl_beta(beta, stats["kl"], cfg.d_targ)
        if callback is not None:
            callback(it, records[-1])
    return theta.detach(), records
