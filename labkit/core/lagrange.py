"""A constrained objective by its Lagrangian: the most reward whose mean cost stays under a bound.

The problem (a constrained MDP: Altman 1999, "Constrained Markov Decision Processes", sec. 1.6
and 3.3, the Lagrangian approach; seed 002, "方法二：约束优化 / Lagrangian"):

    max_pi E[r]   subject to   E[c] <= L

Its Lagrangian, with a multiplier lam >= 0, is one expectation of a shaped reward:

    Lag(pi, lam) = E[r] - lam (E[c] - L) = E[r - lam (c - L)]        (:func:`lagrangian_reward`)

For a fixed lam the policy maximises that reward: a fixed penalty. The constrained optimum is a
saddle point, max over pi and min over lam >= 0; dLag/dlam = -(E[c] - L), so a projected
gradient step on lam from each batch's mean cost (dual ascent, in the usual minimising sign) is

    lam <- max(0, lam + eta (mean c - L))                                (:func:`dual_update`)

lam grows at eta x the violation while the batch is over the bound, shrinks while it is under,
and stops at 0: a constraint that holds costs nothing (complementary slackness). RCPO (Tessler
et al. 2019, "Reward Constrained Policy Optimization", arXiv 1805.11074) is this pair: the
penalty folded into the reward the policy learns from, lam updated on a slower timescale and
projected onto [0, lam_max]. Stooke et al. 2020 (arXiv 2007.03964) read the update as an
integral controller on the cost: it lags, so the cost oscillates around the bound and overshoots
it; their PID multiplier adds proportional and derivative terms (not here).

Seed 002 writes the shaping with a hinge, R = r - lam max(0, c - eps) (``form="hinge"``): only a
sample over the bound pays. That is the Lagrangian of another constraint, E[max(0, c - eps)] <= 0
(every sample under eps), whose dual update (cost max(0, c - eps), bound 0) can never lower lam.

Pure functions of floats or tensors (any device and dtype: a tensor result is on its inputs').

>>> lam = 0.0
>>> for mean_c in (30.0, 30.0, 20.0, 10.0):      # bound L = 25, eta = 0.01
...     lam = dual_update(lam, mean_c, bound=25.0, eta=0.01); print(round(lam, 4))
0.05
0.1
0.05
0.0
"""

from __future__ import annotations

import torch

from labkit.core.options import LAGRANGE_FORMS, choose


def _positive_part(x):
    """max(0, x) for a float or, elementwise, a tensor."""
    return x.clamp(min=0) if isinstance(x, torch.Tensor) else max(0.0, x)


def constraint_cost(c, bound: float, form: str = "linear"):
    """g(c), the term the multiplier weighs: ``c - bound`` for the mean constraint
    E[c] <= L (``"linear"``), ``max(0, c - bound)`` for seed 002's hinge (``"hinge"``).

    >>> constraint_cost(torch.tensor([20.0, 30.0]), 25.0), constraint_cost(20.0, 25.0, "hinge")
    (tensor([-5.,  5.]), 0.0)
    """
    choose("form", form, LAGRANGE_FORMS)
    g = c - bound
    return _positive_part(g) if form == "hinge" else g


def lagrangian_reward(r, c, lam, bound: float, form: str = "linear"):
    """The reward the policy maximises at multiplier ``lam``: r - lam g(c), with g(c) = c - L
    (the Lagrangian of E[c] <= L; Altman 1999 sec. 3.3, RCPO 1805.11074) or, with
    ``form="hinge"``, max(0, c - L) (seed 002's shaping).

    A sample under the bound earns lam (L - c) in the linear form: the Lagrangian rewards slack,
    so a fixed lam keeps pushing the cost down past L; the multiplier's update stops it there.

    >>> r, c = torch.tensor([1.0, 1.0, 0.0]), torch.tensor([20.0, 40.0, 30.0])
    >>> lagrangian_reward(r, c, lam=0.1, bound=30.0)
    tensor([2., 0., 0.])
    >>> lagrangian_reward(r, c, lam=0.1, bound=30.0, form="hinge")
    tensor([1., 0., 0.])
    """
    return r - lam * constraint_cost(c, bound, form)


def dual_update(lam, mean_cost, bound: float, eta: float):
    """The multiplier's projected step: max(0, lam + eta (mean_cost - bound)), with
    ``mean_cost`` the batch's mean c (RCPO's lam update, 1805.11074, with lam_max = infinity).

    ``eta`` is the multiplier's step size, in lam's units per unit of cost; eta = 0 leaves lam
    where it is (a fixed penalty). For seed 002's hinge, pass the mean of max(0, c - eps) and
    bound 0.

    >>> dual_update(0.0, 20.0, bound=25.0, eta=0.01)          # the bound holds: lam stays 0
    0.0
    >>> dual_update(torch.tensor(0.02), torch.tensor(27.0), bound=25.0, eta=0.01)
    tensor(0.0400)
    """
    if eta < 0:
        raise ValueError(f"eta={eta}: the multiplier's step size must be >= 0 (0: a fixed lam)")
    return _positive_part(lam + eta * (mean_cost - bound))
