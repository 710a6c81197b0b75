"""TRPO's natural-gradient step: conjugate gradient on Fisher-vector products, the step size
from the KL bound delta, and a backtracking line search.

TRPO (Schulman et al. 2015, "Trust Region Policy Optimization", arXiv 1502.05477, sec. 6 and
appendix C) solves, around the sampling policy pi_old,

    max_theta  L(theta) = E_{pi_old}[ rho_t A_t ],   rho_t = pi_theta(a_t|s_t) / pi_old(a_t|s_t)
    s.t.       KL_bar(theta) = E_s[ KL(pi_old(.|s) || pi_theta(.|s)) ] <= delta

with L to first order and KL_bar to second: L ~ g^T s, KL_bar ~ 1/2 s^T F s, F the Fisher
matrix, the Hessian of KL_bar at theta_old. The solution is s = sqrt(2 delta / x^T F x) x with
x = F^{-1} g, found by conjugate gradient from products F v alone (F is never formed); a line
search then shrinks s until the true L improves and the true KL_bar <= delta.

Every function here is pure (tensors or callables in, tensors and stats out); the caller owns
the parameters (``labkit.classic.trpo``, ``labkit.algos.trust_region``). Vectors are flat
[N] over the parameters (N letters the parameter count).

Departures, and why: the line search accepts the first shrunk step whose improvement is
positive and whose KL is within delta (Spinning Up's rule); Schulman's code also asks the
improvement to be a fraction ``accept_ratio`` of the linear prediction (0.1 there; 0 here by
default, a keyword to set it). ``damping`` adds lambda v to F v (TRPO's code: 0.1; appendix C
of the paper uses none) so CG stays stable where F is near singular.
"""

from __future__ import annotations

from collections.abc import Callable

import torch


def flat_grad(
    y: torch.Tensor, params, *, create_graph: bool = False, retain_graph: bool | None = None
) -> torch.Tensor:
    """dy/dtheta for a scalar ``y``, flattened over ``params`` into one vector [N] (a parameter
    ``y`` does not reach gets zeros).

    >>> w = torch.tensor([1.0, 2.0], requires_grad=True)
    >>> flat_grad((w**2).sum(), [w])
    tensor([2., 4.])
    """
    grads = torch.autograd.grad(
        y, params, create_graph=create_graph, retain_graph=retain_graph, allow_unused=True
    )
    return torch.cat(
        [(torch.zeros_like(p) if g is None else g).reshape(-1) for g, p in zip(grads, params)]
    )  # [N]


def fisher_vector_product(
    grad_kl: torch.Tensor, params, v: torch.Tensor, *, damping: float = 0.0
) -> torch.Tensor:
    """F v + damping v, with F the Hessian of the mean KL(pi_old || pi_theta) at theta_old:
    F v = d/dtheta (grad KL_bar . v) (Pearlmutter 1994), one extra backward, F never formed.

    ``grad_kl`` [N] is grad KL_bar taken with ``create_graph=True`` (:func:`flat_grad`); at
    theta = theta_old the Hessian of KL(pi_old || pi_theta) equals the Fisher information
    E_{pi_old}[grad log pi grad log pi^T] (TRPO sec. 6), so this is the Fisher-vector product.

    >>> theta = torch.zeros(2, requires_grad=True)            # a 2-way softmax at p = (1/2, 1/2)
    >>> old = torch.log_softmax(theta.detach(), -1)
    >>> kl = (old.exp() * (old - torch.log_softmax(theta, -1))).sum()
    >>> g = flat_grad(kl, [theta], create_graph=True)
    >>> fisher_vector_product(g, [theta], torch.tensor([1.0, 0.0]))  # F = diag(p) - p p^T
    tensor([ 0.2500, -0.2500])
    """
    return flat_grad(grad_kl @ v, params, retain_graph=True) + damping * v  # [N]


def conjugate_gradient(
    Fvp: Callable[[torch.Tensor], torch.Tensor],
    g: torch.Tensor,
    *,
    iters: int = 10,
    tol: float = 1e-10,
) -> tuple[torch.Tensor, dict]:
    """x ~ F^{-1} g by conjugate gradient (Hestenes & Stiefel 1952) from products v -> F v:

        r_0 = p_0 = g, x_0 = 0;  alpha_k = r_k.r_k / p_k.F p_k;  x_{k+1} = x_k + alpha_k p_k;
        r_{k+1} = r_k - alpha_k F p_k;  p_{k+1} = r_{k+1} + (r_{k+1}.r_{k+1} / r_k.r_k) p_k

    F symmetric positive definite; exact after N steps, TRPO stops at 10 (appendix C). Stops
    early once r.r < ``tol``. stats: ``cg/iters``, ``cg/residual`` = |g - F x| / |g|.

    >>> F = torch.tensor([[4.0, 1.0], [1.0, 3.0]])
    >>> x, st = conjugate_gradient(lambda v: F @ v, torch.tensor([1.0, 2.0]))
    >>> x, st["cg/iters"]                                      # F^{-1} g = (1/11, 7/11)
    (tensor([0.0909, 0.6364]), 2)
    """
    x = torch.zeros_like(g)  # [N]
    r, p = g.clone(), g.clone()  # [N] residual g - F x, search direction
    rr = r @ r
    k = 0
    while k < iters and rr > tol:  # a host sync per iteration: CG's length is data-dependent
        Fp = Fvp(p)  # [N]
        alpha = rr / (p @ Fp)
        x = x + alpha * p
        r = r - alpha * Fp
        rr, rr_old = r @ r, rr
        p = r + (rr / rr_old) * p
        k += 1
    residual = (rr.sqrt() / g.norm().clamp(min=1e-30)).detach()
    return x, {"cg/iters": k, "cg/residual": residual}


def natural_step(
    x: torch.Tensor, Fx: torch.Tensor, g: torch.Tensor, delta: float
) -> tuple[torch.Tensor, dict]:
    """The full TRPO step s = sqrt(2 delta / x^T F x) x: where the quadratic model of the KL,
    1/2 s^T F s, reaches delta along the natural gradient x ~ F^{-1} g (TRPO appendix C).

    stats: ``trpo/step_size`` (the factor), ``trpo/expected_improve`` = g . s (the linear
    model's gain in L, what the line search compares with), ``trpo/quadratic_kl`` =
    1/2 s^T F s (= delta).

    >>> s, st = natural_step(torch.tensor([3.0, 4.0]), torch.tensor([3.0, 4.0]),
    ...                      torch.tensor([3.0, 4.0]), delta=0.02)
    >>> s, st["trpo/quadratic_kl"]                             # |s| = sqrt(2 delta) = 0.2
    (tensor([0.1200, 0.1600]), tensor(0.0200))
    """
    xFx = (x @ Fx).clamp(min=1e-30)
    step_size = torch.sqrt(2 * delta / xFx)
    s = step_size * x  # [N]
    stats = {
        "trpo/step_size": step_size.detach(),
        "trpo/expected_improve": (g @ s).detach(),
        "trpo/quadratic_kl": (0.5 * step_size**2 * xFx).detach(),
    }
    return s, stats


def line_search(
    evaluate: Callable[[float], tuple[float, float]],
    expected_improve: float,
    *,
    delta: float,
    backtrack_coef: float = 0.5,
    max_backtracks: int = 10,
    accept_ratio: float = 0.0,
) -> tuple[float, dict]:
    """The fraction f of the full step to take: the first of 1, c, c^2, ... (c =
    ``backtrack_coef``) with

        improve(f) > 0,  improve(f) >= accept_ratio * f * expected_improve,  KL(f) <= delta

    where ``evaluate(f) -> (improve, kl)`` measures the true surrogate gain L(theta_old + f s) -
    L(theta_old) and the true mean KL there (TRPO appendix C). f = 0 (stay at theta_old) when
    none of ``max_backtracks + 1`` tries passes. stats: ``trpo/accepted`` (1/0),
    ``trpo/backtracks``, ``trpo/step_frac``, ``trpo/improve``, ``trpo/kl`` (at the accepted f;
    at f = 0: 0 and 0).

    >>> # a surrogate that improves only for small steps, and a KL that grows as f^2
    >>> ev = lambda f: (f - 2 * f**2, 0.04 * f**2)
    >>> f, st = line_search(ev, expected_improve=1.0, delta=0.01)
    >>> f, st["trpo/backtracks"]                  # f = 1: no gain; 0.5: KL 0.01 <= 0.01, gain 0
    (0.25, 2)
    """
    for j in range(max_backtracks + 1):
        f = backtrack_coef**j
        improve, kl = evaluate(f)
        if improve > 0 and improve >= accept_ratio * f * expected_improve and kl <= delta:
            stats = {"trpo/accepted": 1.0, "trpo/backtracks": j, "trpo/step_frac": f}
            return f, {**stats, "trpo/improve": float(improve), "trpo/kl": float(kl)}
    stats = {"trpo/accepted": 0.0, "trpo/backtracks": max_backtracks + 1, "trpo/step_frac": 0.0}
    return 0.0, {**stats, "trpo/improve": 0.0, "trpo/kl": 0.0}
