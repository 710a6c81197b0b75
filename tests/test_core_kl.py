"""labkit.core.kl and labkit.experiments.kl_table: hand values, exact expectations on a categorical,
autograd identities, extreme inputs, and Schulman's table against its closed forms."""

import math

import pytest
import torch

from labkit.core.kl import (
    LOG_RATIO_MAX,
    kl_estimate,
    kl_exact,
    kl_k1,
    kl_k2,
    kl_k3,
    kl_k3_is,
    kl_k3_st,
)
from labkit.experiments.kl_table import PUBLISHED, closed_form, kl_bandit, schulman_table


def test_hand_values():
    lp, ref = torch.tensor([-1.0, -2.0]), torch.tensor([-2.0, -1.0])
    torch.testing.assert_close(kl_k1(lp, ref), torch.tensor([1.0, -1.0]))
    torch.testing.assert_close(kl_k2(lp, ref), torch.tensor([0.5, 0.5]))
    # r = e^-1: e^-1 - 1 + 1 ; r = e: e - 1 - 1
    torch.testing.assert_close(kl_k3(lp, ref), torch.tensor([math.exp(-1), math.e - 2]))
    torch.testing.assert_close(kl_k3_st(lp, ref), kl_k3(lp, ref))
    old = torch.tensor([-1.5, -2.0])  # ratios e^0.5 and 1
    torch.testing.assert_close(
        kl_k3_is(lp, ref, old), torch.tensor([math.exp(0.5 - 1), math.e - 2])
    )


def test_k3_nonnegative_and_zero_when_equal():
    torch.manual_seed(0)
    lp, ref = torch.randn(10_000) * 5, torch.randn(10_000) * 5
    assert (kl_k3(lp, ref) >= 0).all() and (kl_k2(lp, ref) >= 0).all()
    assert torch.equal(kl_k3(lp, lp), torch.zeros_like(lp))
    assert torch.equal(kl_k3_is(lp, lp, lp), torch.zeros_like(lp))


def categorical(seed=0, V=6):
    g = torch.Generator().manual_seed(seed)
    theta = torch.randn(V, generator=g, dtype=torch.float64).requires_grad_()
    ref_logits = torch.randn(V, generator=g, dtype=torch.float64)
    old_logits = theta.detach() + 0.7 * torch.randn(V, generator=g, dtype=torch.float64)
    return theta, ref_logits, old_logits


def test_expectations_on_a_categorical():
    theta, ref_logits, old_logits = categorical()
    logp, ref = theta.log_softmax(-1), ref_logits.log_softmax(-1)
    pi, kl = logp.exp(), kl_exact(theta, ref_logits)
    torch.testing.assert_close((pi * kl_k1(logp, ref)).sum(), kl)  # unbiased
    torch.testing.assert_close((pi * kl_k3(logp, ref)).sum(), kl)  # unbiased
    assert abs((pi * kl_k2(logp, ref)).sum() - kl) > 1e-2  # biased
    old = old_logits.log_softmax(-1)  # samples from pi_old: the IS-corrected k3 is unbiased
    torch.testing.assert_close((old.exp() * kl_k3_is(logp, ref, old)).sum(), kl)


def expected_grad(estimator, weights_from=None):
    """grad_theta of sum_y q(y) k(y) with q = pi (detached), or pi_old for IS-corrected k3."""
    theta, ref_logits, old_logits = categorical(1)
    logp, ref = theta.log_softmax(-1), ref_logits.log_softmax(-1)
    if weights_from == "old":
        old = old_logits.log_softmax(-1)
        value = (old.exp() * kl_k3_is(logp, ref, old)).sum()
    else:
        value = (logp.exp().detach() * estimator(logp, ref)).sum()
    (g,) = torch.autograd.grad(value, theta)
    return g, theta, ref_logits


def test_k2_gradient_is_the_exact_kl_gradient():
    g, theta, ref_logits = expected_grad(kl_k2)
    (g_true,) = torch.autograd.grad(kl_exact(theta, ref_logits), theta)
    torch.testing.assert_close(g, g_true)
    g_st, _, _ = expected_grad(kl_k3_st)  # straight-through k3 has k2's gradient
    torch.testing.assert_close(g_st, g_true)


def test_k1_and_k3_gradients_as_losses():
    g1, _, _ = expected_grad(kl_k1)  # E[grad log pi] = 0: k1 as a loss does nothing on average
    torch.testing.assert_close(g1, torch.zeros_like(g1))
    g3, theta, ref_logits = expected_grad(kl_k3)  # k3 as a loss: the forward KL's gradient
    (g_fwd,) = torch.autograd.grad(kl_exact(ref_logits, theta), theta)
    torch.testing.assert_close(g3, g_fwd)
    (g_rev,) = torch.autograd.grad(kl_exact(theta, ref_logits), theta)
    assert (g3 - g_rev).abs().max() > 1e-3  # ...which is not the reverse KL's


def test_is_corrected_k3_gradient_is_unbiased_off_policy():
    g, theta, ref_logits = expected_grad(None, weights_from="old")
    (g_true,) = torch.autograd.grad(kl_exact(theta, ref_logits), theta)
    torch.testing.assert_close(g, g_true)


def test_kl_exact():
    p = torch.tensor([0.5, 0.5]).log()
    q = torch.tensor([0.9, 0.1]).log()
    expected = 0.5 * math.log(0.5 / 0.9) + 0.5 * math.log(0.5 / 0.1)
    torch.testing.assert_close(kl_exact(p, q), torch.tensor(expected))
    torch.manual_seed(0)
    a, b = torch.randn(3, 4, 7), torch.randn(3, 4, 7)
    out = kl_exact(a, b)
    assert out.shape == (3, 4) and (out >= 0).all()
    torch.testing.assert_close(kl_exact(a, a + 5.0), torch.zeros(3, 4))  # shift invariant


@pytest.mark.parametrize("fn", [kl_k1, kl_k2, kl_k3, kl_k3_st])
def test_extreme_log_ratios_are_finite(fn):
    lp = torch.tensor([0.0, -100.0, -100.0, 0.0], requires_grad=True)
    ref = torch.tensor([-100.0, 0.0, -100.0, 0.0])
    out = fn(lp, ref)
    out.sum().backward()
    assert torch.isfinite(out).all() and torch.isfinite(lp.grad).all()


def test_k3_clamp_is_exactly_the_documented_bound():
    lp, ref = torch.tensor([-100.0, 0.0]), torch.tensor([0.0, -100.0])  # log r = +100, -100
    expected = torch.tensor([math.exp(LOG_RATIO_MAX) - 1 - 100, math.exp(-100) - 1 + 100])
    torch.testing.assert_close(kl_k3(lp, ref), expected)
    lp = torch.tensor([-100.0, 0.0], requires_grad=True)
    kl_k3_is(lp, torch.zeros(2), torch.tensor([0.0, -100.0])).sum().backward()
    assert torch.isfinite(lp.grad).all()
    # below the bound nothing is clamped: exact k3
    x = torch.tensor([-19.0])
    torch.testing.assert_close(kl_k3(x, torch.zeros(1)), torch.tensor([math.exp(19) - 1 - 19]))


def verl_low_var_kl(logp, ref_logp):
    """verl/trainer/ppo/core_algos.py kl_penalty("low_var_kl"), transcribed."""
    kl = (ref_logp - logp).clamp(-20, 20)
    return (kl.exp() - kl - 1).clamp(-10, 10)


def test_k3_clamp_equals_verls_low_var_kl_and_default_is_unclamped():
    torch.manual_seed(0)
    lp, ref = torch.randn(10_000) * 30, torch.randn(10_000) * 30  # |log r| up to ~150
    lp[:4], ref[:4] = torch.tensor([-1e4, 0.0, -25.0, 0.0]), torch.tensor([0.0, -1e4, 0.0, -25.0])
    torch.testing.assert_close(kl_k3(lp, ref, clamp=10.0), verl_low_var_kl(lp, ref))
    torch.testing.assert_close(kl_estimate(lp, ref, "k3", clamp=10.0), verl_low_var_kl(lp, ref))
    assert kl_k3(lp, ref).max() > 1e8  # the default is TRL's unbounded k3
    with pytest.raises(ValueError, match="k3 only"):
        kl_estimate(lp, ref, "k2", clamp=10.0)


def test_k3_is_takes_a_ratio_or_old_logp_not_both():
    lp, ref, old = (
        torch.tensor([[-1.0, -2.0]]),
        torch.tensor([[-2.0, -1.0]]),
        torch.tensor([[-1.5, -2.0]]),
    )
    by_old = kl_k3_is(lp, ref, old)
    assert torch.equal(by_old, kl_k3_is(lp, ref, ratio=(lp - old).exp()))
    seq = torch.tensor([[2.0]])  # a GSPO sequence ratio [B, 1] broadcasts over tokens
    assert torch.equal(kl_k3_is(lp, ref, ratio=seq), 2.0 * kl_k3(lp, ref))
    for bad in ({}, {"old_logp": old, "ratio": seq}):
        with pytest.raises(ValueError, match="exactly one"):
            kl_k3_is(lp, ref, **bad)


def test_kl_exact_and_fp16_edges():
    inf = float("inf")
    lg = torch.tensor([[0.0, 1.0, -inf]])
    assert kl_exact(lg, lg).item() == 0  # was NaN: 0 * (-inf - -inf)
    assert kl_exact(torch.tensor([0.0, 0.0]), torch.tensor([0.0, -inf])).item() == inf  # true value
    half = kl_k3(torch.tensor([-30.0], dtype=torch.float16), torch.zeros(1, dtype=torch.float16))
    assert half.dtype == torch.float32 and torch.isfinite(half).all()  # was inf in fp16


def test_single_token_and_empty():
    assert kl_k3(torch.tensor([-0.5]), torch.tensor([-0.5])).shape == (1,)
    assert kl_k3(torch.empty(0), torch.empty(0)).shape == (0,)


def test_kl_estimate_dispatch():
    lp, ref = torch.tensor([-1.0]), torch.tensor([-2.0])
    for name, fn in (("k1", kl_k1), ("k2", kl_k2), ("k3", kl_k3), ("k3_st", kl_k3_st)):
        torch.testing.assert_close(kl_estimate(lp, ref, name), fn(lp, ref))
    with pytest.raises(ValueError, match="k1"):
        kl_estimate(lp, ref, "k4")


# ---------------------------------------------------------------- Schulman's table


def test_closed_forms_match_references_md():
    assert closed_form(0.1, "k2")[0] == pytest.approx(0.0025)
    assert closed_form(0.1, "k2")[1] == pytest.approx(1.4177, abs=1e-4)
    assert closed_form(1.0, "k2")[1] == pytest.approx(1.7321, abs=1e-4)
    assert closed_form(0.1, "k3")[1] == pytest.approx(1.4166, abs=1e-4)
    assert closed_form(1.0, "k3")[1] == pytest.approx(1.6950, abs=1e-4)
    assert closed_form(0.1, "k1")[1] == pytest.approx(20.0)
    with pytest.raises(ValueError):
        closed_form(1.0, "k5")


def test_published_numbers_are_the_closed_forms_rounded():
    for (mu, name), (bias, std) in PUBLISHED.items():
        c_bias, c_std = closed_form(mu, name)
        assert abs(c_bias - bias) <= 0.0005 + 1e-12, (mu, name)  # 0.0025 printed as 0.002
        assert abs(c_std - std) <= 0.005 + 1e-12, (mu, name)


MUS = (0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 2.0)


def test_monte_carlo_matches_closed_forms_within_sampling_error():
    df = schulman_table(MUS, n=300_000, seed=0)
    assert len(df) == 3 * len(MUS)
    for r in df.to_dict("records"):
        z_bias = (r["bias/KL"] - r["bias/KL closed"]) / r["bias/KL se"]
        assert abs(z_bias) < 4, (r["mu"], r["estimator"], z_bias)
        if r["estimator"] == "k3" and r["mu"] > 1:
            continue  # r is log-normal: its sample std has too heavy a tail for a 4-se check
        z_std = (r["std/KL"] - r["std/KL closed"]) / r["std/KL se"]
        assert abs(z_std) < 4, (r["mu"], r["estimator"], z_std)


def test_table_separates_k2_bias_at_mu_1():
    df = schulman_table((1.0,), n=300_000, seed=1).set_index("estimator")
    assert df.loc["k2", "bias/KL"] == pytest.approx(0.25, abs=0.01)
    assert abs(df.loc["k3", "bias/KL"]) < 0.01 and abs(df.loc["k1", "bias/KL"]) < 0.01
    assert df.loc["k3", "std/KL published"] == 1.70
    assert math.isnan(schulman_table((0.5,), n=1000).loc[0, "std/KL published"])


# ---------------------------------------------------------------- KL in the reward vs as a loss


def test_kl_bandit_reaches_the_kl_regularised_optimum_only_with_reverse_kl_gradients():
    r, ref, beta = [1.0, 0.3, 0.0, -0.5], [0.1, 0.2, 0.3, 0.4], 0.5
    df = kl_bandit(r, ref, beta=beta)
    target = torch.tensor(ref).log() + torch.tensor(r) / beta
    torch.testing.assert_close(torch.tensor(df["pi*"].values), target.double().softmax(-1))
    for use in ("k1 in reward", "k2 as loss", "k3 x ratio as loss", "k3_st as loss"):
        assert (df[use] - df["pi*"]).abs().max() < 1e-3, use
    assert df["k1 as loss"][0] > 0.99  # no regularisation: all mass on the best action
    # k3 as a loss: stationary point of E_pi[r] - beta KL(pi_ref || pi) (forward KL):
    # pi_j (r_j - E_pi r) + beta (pi_ref_j - pi_j) = 0
    pi, rr, q = (torch.tensor(df[c].values) for c in ("k3 as loss", "r", "pi_ref"))
    residual = pi * (rr - (pi * rr).sum()) + beta * (q - pi)
    assert residual.abs().max() < 1e-4
    assert (df["k3 as loss"] - df["pi*"]).abs().max() > 0.05
