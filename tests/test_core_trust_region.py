"""TRPO's pieces and the adaptive-KL rules against closed forms and hand-computed cases.

- conjugate gradient against a direct solve on a small Fisher matrix;
- the Fisher-vector product (the Hessian of KL(pi_old || pi_theta) at theta_old) against the
  explicit Fisher E_s E_a[grad log pi grad log pi^T] of a small categorical policy;
- the natural step's quadratic KL equals delta; the line search's accept/reject on a hand-made
  surrogate;
- PPO's adaptive beta (1707.06347 sec. 4) and Ziegler et al.'s proportional one on hand-computed
  sequences.
"""

import math

import pytest
import torch

from labkit.core.kl_control import adaptive_kl_beta, proportional_kl_beta
from labkit.core.trust_region import (
    conjugate_gradient,
    fisher_vector_product,
    flat_grad,
    line_search,
    natural_step,
)

S, A, D = 3, 4, 5  # states, actions, features of a linear-softmax policy


@pytest.fixture(autouse=True)
def float64():
    """Closed forms compared at 1e-8: every tensor of this module in float64, then restored."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)


def policy():
    """pi(a|s) = softmax(Phi[s] theta)_a, Phi [S, A, D]: a dense (non-tabular) Fisher."""
    g = torch.Generator().manual_seed(0)
    Phi = torch.randn(S, A, D, generator=g)  # [S, A, D]
    theta = torch.randn(D, generator=g)  # [D]
    w = torch.tensor([0.5, 0.3, 0.2])  # the state distribution the KL averages over
    return Phi, theta, w


def log_pi(Phi, theta):
    return torch.log_softmax(Phi @ theta, -1)  # [S, A]


def explicit_fisher(Phi, theta, w):
    """F = sum_s w_s sum_a pi(a|s) grad log pi(a|s) grad log pi(a|s)^T, one gradient per (s, a)."""
    F = torch.zeros(D, D)
    pi = log_pi(Phi, theta).exp().detach()
    for s in range(S):
        for a in range(A):
            th = theta.clone().requires_grad_(True)
            (score,) = torch.autograd.grad(log_pi(Phi, th)[s, a], th)  # [D]
            F += w[s] * pi[s, a] * torch.outer(score, score)
    return F


def kl_grad(Phi, theta, w):
    """grad of KL_bar(theta) = sum_s w_s KL(pi_old(.|s) || pi_theta(.|s)) at theta = theta_old,
    with its graph (what fisher_vector_product differentiates again)."""
    th = theta.clone().requires_grad_(True)
    old = log_pi(Phi, theta).detach()  # [S, A]
    kl = (w * (old.exp() * (old - log_pi(Phi, th))).sum(-1)).sum()
    return th, flat_grad(kl, [th], create_graph=True)


def test_fisher_vector_product_equals_explicit_fisher():
    Phi, theta, w = policy()
    F = explicit_fisher(Phi, theta, w)
    th, g_kl = kl_grad(Phi, theta, w)
    assert torch.allclose(g_kl, torch.zeros(D), atol=1e-12)  # KL is minimal at theta_old
    for k in range(3):
        v = torch.randn(D, generator=torch.Generator().manual_seed(k))
        torch.testing.assert_close(fisher_vector_product(g_kl, [th], v), F @ v)
    torch.testing.assert_close(fisher_vector_product(g_kl, [th], v, damping=0.1), F @ v + 0.1 * v)


def test_tabular_fisher_is_diag_p_minus_ppT():
    """One state, a softmax over 3 logits: F = diag(p) - p p^T (the closed form)."""
    theta = torch.tensor([0.2, -0.5, 1.0])
    p = torch.softmax(theta, -1)
    th = theta.clone().requires_grad_(True)
    old = torch.log_softmax(theta, -1)
    g_kl = flat_grad((p * (old - torch.log_softmax(th, -1))).sum(), [th], create_graph=True)
    F = torch.stack([fisher_vector_product(g_kl, [th], e) for e in torch.eye(3)])
    torch.testing.assert_close(F, torch.diag(p) - torch.outer(p, p))


def test_conjugate_gradient_equals_direct_solve_on_a_fisher_matrix():
    Phi, theta, w = policy()
    F = explicit_fisher(Phi, theta, w)
    assert torch.linalg.eigvalsh(F).min() > 1e-6  # positive definite: a unique solution
    g = torch.randn(D, generator=torch.Generator().manual_seed(5))
    x, st = conjugate_gradient(lambda v: F @ v, g, iters=D, tol=0.0)
    torch.testing.assert_close(x, torch.linalg.solve(F, g), rtol=1e-8, atol=1e-8)
    assert st["cg/iters"] == D and st["cg/residual"] < 1e-8
    # fewer iterations than dimensions: an approximation whose residual CG reports
    x3, st3 = conjugate_gradient(lambda v: F @ v, g, iters=2, tol=0.0)
    assert st3["cg/iters"] == 2
    assert st3["cg/residual"] == pytest.approx(float((g - F @ x3).norm() / g.norm()), rel=1e-6)


def test_conjugate_gradient_through_fisher_vector_products():
    """CG on products alone (F never formed) reaches the same x as the direct solve."""
    Phi, theta, w = policy()
    F = explicit_fisher(Phi, theta, w)
    th, g_kl = kl_grad(Phi, theta, w)
    g = torch.randn(D, generator=torch.Generator().manual_seed(6))
    x, _ = conjugate_gradient(lambda v: fisher_vector_product(g_kl, [th], v), g, iters=2 * D)
    torch.testing.assert_close(x, torch.linalg.solve(F, g), rtol=1e-7, atol=1e-7)


def test_natural_step_reaches_delta_on_the_quadratic_kl():
    Phi, theta, w = policy()
    F = explicit_fisher(Phi, theta, w)
    g = torch.randn(D, generator=torch.Generator().manual_seed(7))
    x = torch.linalg.solve(F, g)
    s, st = natural_step(x, F @ x, g, delta=0.01)
    assert float(0.5 * s @ F @ s) == pytest.approx(0.01)
    assert float(st["trpo/quadratic_kl"]) == pytest.approx(0.01)
    # closed form: s = sqrt(2 delta / g^T F^-1 g) F^-1 g, gain g.s = sqrt(2 delta g^T F^-1 g)
    assert float(st["trpo/expected_improve"]) == pytest.approx(math.sqrt(0.02 * float(g @ x)))


def test_natural_step_on_a_real_policy_stays_near_delta():
    """The true KL of the full step is delta to second order: close to it for a small delta."""
    Phi, theta, w = policy()
    F = explicit_fisher(Phi, theta, w)
    g = torch.randn(D, generator=torch.Generator().manual_seed(8))
    x = torch.linalg.solve(F, g)
    s, _ = natural_step(x, F @ x, g, delta=1e-4)
    old, new = log_pi(Phi, theta), log_pi(Phi, theta + s)
    kl = float((w * (old.exp() * (old - new)).sum(-1)).sum())
    assert kl == pytest.approx(1e-4, rel=0.05)


def test_line_search_accepts_the_full_step_when_it_passes():
    f, st = line_search(lambda f: (0.5 * f, 0.005 * f**2), 0.5, delta=0.01)
    assert (f, st["trpo/accepted"], st["trpo/backtracks"]) == (1.0, 1.0, 0)
    assert st["trpo/improve"] == 0.5 and st["trpo/kl"] == 0.005


def test_line_search_backtracks_until_the_kl_fits():
    # KL = 0.04 f^2: 0.04 at f = 1, 0.01 at f = 1/2 (the bound is inclusive)
    f, st = line_search(lambda f: (f, 0.04 * f**2), 1.0, delta=0.01)
    assert (f, st["trpo/backtracks"], st["trpo/kl"]) == (0.5, 1, 0.01)


def test_line_search_rejects_a_step_that_does_not_improve():
    # the surrogate falls for f > 1/2 and KL is never binding: f = 1 loses, f = 1/2 gains 0
    # (not > 0), f = 1/4 gains 1/8
    f, st = line_search(lambda f: (f - 2 * f**2, 0.0), 1.0, delta=0.01, backtrack_coef=0.5)
    assert (f, st["trpo/backtracks"], st["trpo/improve"]) == (0.25, 2, 0.125)


def test_line_search_gives_up_and_stays():
    f, st = line_search(lambda f: (-f, 0.0), 1.0, delta=0.01, max_backtracks=3)
    assert (f, st["trpo/accepted"], st["trpo/backtracks"]) == (0.0, 0.0, 4)


def test_line_search_accept_ratio_asks_for_a_fraction_of_the_predicted_gain():
    # true gain 0.05 f against a predicted 1.0 f: 5 % of the prediction
    f, _ = line_search(lambda f: (0.05 * f, 0.0), 1.0, delta=0.01, accept_ratio=0.0)
    assert f == 1.0
    f, st = line_search(lambda f: (0.05 * f, 0.0), 1.0, delta=0.01, accept_ratio=0.1)
    assert f == 0.0 and st["trpo/accepted"] == 0.0


def test_adaptive_kl_beta_halves_and_doubles_as_ppo_writes_it():
    """PPO (1707.06347 sec. 4), d_targ = 0.01: the band [0.01 / 1.5, 0.015] leaves beta alone."""
    d_seq = [0.001, 0.005, 0.0067, 0.010, 0.015, 0.0151, 0.03, 0.03, 0.002]
    want = [0.5, 0.25, 0.25, 0.25, 0.25, 0.5, 1.0, 2.0, 1.0]
    beta, got = 1.0, []
    for d in d_seq:
        beta = adaptive_kl_beta(beta, d, d_targ=0.01)
        got.append(beta)
    assert got == want
    assert adaptive_kl_beta(1.0, 0.01 / 1.5, 0.01) == 1.0  # the edges are inside the band
    assert adaptive_kl_beta(1.0, 0.01 * 1.5, 0.01) == 1.0
    with pytest.raises(ValueError, match="d_targ=0"):
        adaptive_kl_beta(1.0, 0.01, 0.0)


def test_proportional_kl_beta_is_trl_and_ziegler():
    """TRL <= 0.11 defaults: init 0.2, target 6, horizon 10000; batch 256."""
    step = lambda b, kl: proportional_kl_beta(b, kl, 6.0, n_steps=256, horizon=10000)
    assert step(0.2, 6.0) == 0.2  # on target: unchanged
    assert step(0.2, 6.6) == pytest.approx(0.2 * (1 + 0.1 * 0.0256))  # e = 0.1
    assert step(0.2, 3.0) == pytest.approx(0.2 * (1 - 0.2 * 0.0256))  # e = -0.5 clipped
    assert step(0.2, 600.0) == pytest.approx(0.2 * (1 + 0.2 * 0.0256))  # e = 99 clipped
    # alpaca_farm's form (seed 004's kl_ctl): beta (1 + k_beta e), k_beta = 0.1
    beta = 0.02
    for kl, e in ((12.0, 0.2), (5.0, -1 / 6), (6.0, 0.0)):
        want = beta * (1 + 0.1 * e)
        beta = proportional_kl_beta(beta, kl, 6.0, n_steps=0.1, horizon=1)
        assert beta == pytest.approx(want)


def test_the_two_controllers_differ_on_the_same_kl():
    """Twice the target: PPO's rule doubles beta at once, Ziegler's moves it by 20 % x K_beta."""
    assert adaptive_kl_beta(1.0, 0.02, 0.01) == 2.0
    assert proportional_kl_beta(1.0, 0.02, 0.01, n_steps=1, horizon=1) == pytest.approx(1.2)
    assert proportional_kl_beta(1.0, 0.011, 0.01, n_steps=1, horizon=1) == pytest.approx(1.1)
    assert adaptive_kl_beta(1.0, 0.011, 0.01) == 1.0  # inside PPO's dead band
