"""The Lagrangian of a mean-cost bound (labkit.core.lagrange): the shaped reward of a batch by
hand, the multiplier's projected step against hand-computed sequences, the autograd identity
that makes it the dual gradient, and its fixed point against the closed form on a toy primal."""

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from labkit.core.lagrange import constraint_cost, dual_update, lagrangian_reward


def test_the_shaped_reward_of_a_hand_batch():
    r = torch.tensor([1.0, 0.0, 1.0, 0.0])
    c = torch.tensor([10.0, 20.0, 30.0, 40.0])  # L = 25: slack 15, 5; over by 5, 15
    shaped = lagrangian_reward(r, c, lam=0.1, bound=25.0)
    assert torch.allclose(shaped, torch.tensor([2.5, 0.5, 0.5, -1.5]))
    hinge = lagrangian_reward(r, c, lam=0.1, bound=25.0, form="hinge")  # seed 002's
    assert torch.allclose(hinge, torch.tensor([1.0, 0.0, 0.5, -1.5]))
    assert lagrangian_reward(1.0, 30.0, lam=0.0, bound=25.0) == 1.0  # lam = 0: r itself


def test_the_batch_mean_of_the_shaped_reward_is_the_lagrangian():
    g = torch.Generator().manual_seed(0)
    r, c = torch.rand(64, generator=g), 50 * torch.rand(64, generator=g)  # [B]
    lam, L = 0.03, 20.0
    assert torch.allclose(
        lagrangian_reward(r, c, lam, L).mean(), r.mean() - lam * (c.mean() - L), atol=1e-6
    )


def test_the_multiplier_stays_zero_while_the_constraint_holds():
    lam = 0.0
    for mean_c in (20.0, 24.9, 25.0, 3.0):  # L = 25: never over
        lam = dual_update(lam, mean_c, bound=25.0, eta=0.5)
        assert lam == 0.0


def test_the_multiplier_grows_at_eta_times_the_violation_then_falls_to_zero():
    lam, eta, L = 0.0, 0.01, 25.0
    for k in range(1, 4):  # over by 5 each step: lam = 0.05 k
        lam = dual_update(lam, 30.0, L, eta)
        assert lam == pytest.approx(0.05 * k)
    lam = dual_update(lam, 15.0, L, eta)  # 0.15 - 0.01 x 10
    assert lam == pytest.approx(0.05)
    lam = dual_update(lam, 0.0, L, eta)  # 0.05 - 0.25 < 0: projected to 0
    assert lam == 0.0


@given(
    st.floats(0, 10),
    st.lists(st.floats(0, 100), min_size=1, max_size=20),
    st.floats(0, 1),
)
def test_the_multiplier_is_never_negative(lam, costs, eta):
    for c in costs:
        lam = dual_update(lam, c, bound=50.0, eta=eta)
        assert lam >= 0.0


def test_the_step_is_the_negative_gradient_of_the_lagrangian_in_lam():
    """lam + eta (mean c - L) = lam - eta dLag/dlam, Lag = mean(r - lam (c - L)) (autograd)."""
    r, c = torch.tensor([1.0, 0.0, 1.0]), torch.tensor([12.0, 30.0, 27.0])
    lam = torch.tensor(0.2, requires_grad=True)
    (grad,) = torch.autograd.grad(lagrangian_reward(r, c, lam, 20.0).mean(), lam)
    step = dual_update(lam.detach(), c.mean(), bound=20.0, eta=0.1)
    assert torch.allclose(step, lam.detach() - 0.1 * grad)


@pytest.mark.parametrize("c0, lam_star", [(40.0, 0.015), (20.0, 0.0)])
def test_the_update_finds_the_multiplier_that_meets_the_bound(c0, lam_star):
    """A toy primal whose best response to lam costs c(lam) = max(0, c0 - k lam): the dual step
    converges to lam* = (c0 - L) / k when the unconstrained cost c0 is over L (then c = L), and
    to 0 when it is not (complementary slackness). eta k = 0.5: a contraction."""
    L, k, eta = 25.0, 1000.0, 5e-4
    lam = 0.0
    for _ in range(100):
        lam = dual_update(lam, max(0.0, c0 - k * lam), L, eta)
    assert lam == pytest.approx(lam_star, abs=1e-9)
    assert max(0.0, c0 - k * lam) == pytest.approx(min(c0, L))


def test_tensors_keep_their_device_and_dtype():
    for dtype in (torch.float64, torch.bfloat16):
        r = torch.ones(3, dtype=dtype)
        c = torch.tensor([1.0, 2.0, 3.0], dtype=dtype)
        assert lagrangian_reward(r, c, 0.5, 2.0).dtype == dtype
        assert dual_update(torch.tensor(0.1, dtype=dtype), c.mean(), 2.0, 0.1).dtype == dtype
    meta = torch.empty(4, device="meta")  # no values: only where the result is made
    assert lagrangian_reward(meta, meta, 0.1, 2.0).device.type == "meta"
    assert constraint_cost(meta, 2.0, "hinge").device.type == "meta"
    assert dual_update(torch.empty((), device="meta"), meta.mean(), 2.0, 0.1).is_meta


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="eta=-0.1"):
        dual_update(0.0, 1.0, 1.0, eta=-0.1)
    with pytest.raises(ValueError, match="form='square'"):
        lagrangian_reward(1.0, 2.0, 0.1, 1.0, form="square")
