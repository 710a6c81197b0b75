"""labkit.core losses: hand-computed values, autograd identities, aggregation weights, extremes."""

import math

import pytest
import torch

from labkit.core import (
    bradley_terry_loss,
    dpo_loss,
    kl_exact,
    policy_loss,
    token_weights,
    value_loss,
)
from labkit.core.policy import LOSS_TYPES
from labkit.core.surrogate import clipped_surrogate, importance_ratio, kl_penalty

MASK = torch.tensor([[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]])


def kwargs_for(loss_type):
    return {"epsilon_high": 5.0} if loss_type == "cispo" else {}


# ---------------------------------------------------------------- token weights


def test_token_weights_by_hand():
    w = token_weights(MASK, "grpo")  # 1 / (B |o_i|)
    torch.testing.assert_close(w[:, 0], torch.tensor([1 / 12, 1 / 6, 1 / 3]))
    torch.testing.assert_close(token_weights(MASK, "bnpo"), MASK / 7)
    torch.testing.assert_close(token_weights(MASK, "dr_grpo"), MASK / 12)  # B * T
    torch.testing.assert_close(token_weights(MASK, "dr_grpo", max_completion_length=10), MASK / 30)
    torch.testing.assert_close(token_weights(MASK, "dapo"), MASK / 7)
    torch.testing.assert_close(token_weights(MASK, "cispo", num_items_in_batch=14), MASK / 14)
    torch.testing.assert_close(token_weights(MASK, "reinforce"), MASK / 3)
    for lt in ("grpo", "bnpo", "dapo"):
        assert token_weights(MASK, lt).sum() == pytest.approx(1.0)
    with pytest.raises(ValueError, match="loss_type"):
        token_weights(MASK, "ppo")


def test_token_weights_empty_rows_are_finite():
    m = torch.tensor([[1.0, 1.0], [0.0, 0.0]])
    for lt in LOSS_TYPES:
        w = token_weights(m, lt)
        assert torch.isfinite(w).all() and (w[1] == 0).all()
    assert torch.equal(token_weights(torch.zeros(2, 3), "bnpo"), torch.zeros(2, 3))


# ---------------------------------------------------------------- policy_loss by hand


def test_ppo_clip_by_hand():
    logp = torch.log(torch.tensor([[0.3, 0.1]]))
    old = logp - torch.log(torch.tensor([[1.5, 0.5]]))  # ratios 1.5 and 0.5
    m = torch.ones(1, 2)
    loss, st = policy_loss(logp, old, torch.tensor([1.0]), m)  # A > 0: -(1.2 + 0.5) / 2
    assert loss.item() == pytest.approx(-0.85, abs=1e-6)
    assert (st["clip/ratio_high"], st["clip/ratio_low"], st["clip/region"]) == (0.5, 0.0, 0.5)
    loss, st = policy_loss(logp, old, torch.tensor([-1.0]), m)  # A < 0: (1.5 + 0.8) / 2
    assert loss.item() == pytest.approx(1.15, abs=1e-6)
    assert (st["clip/ratio_high"], st["clip/ratio_low"], st["clip/region"]) == (0.0, 0.5, 0.5)
    assert st["ratio/min"].item() == pytest.approx(0.5) and st["ratio/max"].item() == pytest.approx(
        1.5
    )
    assert st["ratio/mean"].item() == pytest.approx(1.0)
    loss, _ = policy_loss(logp, old, torch.tensor([1.0]), m, epsilon_high=0.28)  # clip-higher
    assert loss.item() == pytest.approx(-(1.28 + 0.5) / 2, abs=1e-6)
    loss, _ = policy_loss(logp, old, torch.tensor([-1.0]), m, delta=1.3)  # two-sided: 1.5 -> 1.3
    assert loss.item() == pytest.approx((1.3 + 0.8) / 2, abs=1e-6)


def test_cispo_and_reinforce_by_hand():
    logp = torch.log(torch.tensor([[0.3, 0.1]])).requires_grad_()
    old = logp.detach() - torch.log(torch.tensor([[3.0, 0.5]]))  # ratios 3 and 0.5
    loss, st = policy_loss(
        logp, old, torch.tensor([2.0]), torch.ones(1, 2), loss_type="cispo", epsilon_high=2.0
    )
    # -(sg(min(r, 2)) A log pi) averaged over 2 tokens: weights 2 and 0.5
    expected = -(2.0 * 2 * math.log(0.3) + 0.5 * 2 * math.log(0.1)) / 2
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    assert st["clip/ratio_high"] == 0.5
    (g,) = torch.autograd.grad(loss, logp)
    torch.testing.assert_close(g, torch.tensor([[-2.0, -0.5]]))  # the weight has no gradient
    lp = torch.log(torch.tensor([[0.5, 0.5], [0.25, 1.0]]))
    m = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    loss, st = policy_loss(lp, lp + 3, torch.tensor([1.0, -2.0]), m, loss_type="reinforce")
    # -(1/B) sum_i A_i sum_t log pi: -(2 log .5 - 2 log .25) / 2 ; old_logp is ignored
    assert loss.item() == pytest.approx(-(2 * math.log(0.5) - 2 * math.log(0.25)) / 2, rel=1e-6)
    assert st["clip/region"] == 0


def test_gspo_sequence_ratio_by_hand():
    logp = torch.zeros(1, 3)
    old = -torch.tensor([[0.2, 0.4, 9.0]])  # last token masked out: mean log ratio 0.3
    m = torch.tensor([[1.0, 1.0, 0.0]])
    _, st = policy_loss(
        logp, old, torch.tensor([1.0]), m, importance_sampling_level="sequence", epsilon=0.5
    )
    ratio = st["per_token"]["ratio"]
    torch.testing.assert_close(ratio, torch.full((1, 3), math.exp(0.3)))
    assert st["ratio/max"].item() == pytest.approx(math.exp(0.3))


def test_per_token_advantages_and_per_token_stats():
    torch.manual_seed(0)
    logp, old = torch.randn(3, 4), torch.randn(3, 4)
    adv = torch.randn(3, 4)
    loss, st = policy_loss(logp, old, adv, MASK, ref_logp=torch.randn(3, 4), beta=0.1)
    pt = st["per_token"]
    assert set(pt) == {"ratio", "clipped", "weight", "loss", "k1", "k2", "k3"}
    assert all(v.shape == (3, 4) and not v.requires_grad for v in pt.values())
    torch.testing.assert_close(loss, (pt["weight"] * pt["loss"]).sum())
    for k, v in st.items():
        if k != "per_token":
            assert v.dim() == 0 and not v.requires_grad, k
    for key in (
        "clip/ratio_low",
        "clip/ratio_high",
        "clip/region",
        "ratio/mean",
        "ratio/min",
        "ratio/max",
        "kl",
        "kl/k1",
        "kl/k2",
        "kl/k3",
        "loss/policy",
        "loss/kl",
    ):
        assert key in st


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
@pytest.mark.parametrize("level", ["token", "sequence"])
def test_policy_loss_is_the_sum_of_its_pieces(loss_type, level):
    g = torch.Generator().manual_seed(4)
    logp, old, ref = (torch.randn(3, 4, generator=g) - 1 for _ in range(3))
    adv = torch.randn(3, generator=g)
    kw = {"epsilon_high": 5.0 if loss_type == "cispo" else 0.28, "delta": 1.5}
    loss, st = policy_loss(
        logp,
        old,
        adv,
        MASK,
        loss_type=loss_type,
        importance_sampling_level=level,
        ref_logp=ref,
        beta=0.1,
        **kw,
    )
    ratio, r_info = importance_ratio(logp, old, MASK, level)
    l_pg, c_info = clipped_surrogate(
        ratio, adv, logp, MASK.long(), loss_type=loss_type, level=level, **kw
    )  # any 0/1 mask dtype
    kl, k_info = kl_penalty(logp, ref, ratio, MASK.bool())
    w = token_weights(MASK, loss_type)
    assert torch.equal(loss, (w * l_pg).sum() + 0.1 * (w * kl).sum())
    for info in (r_info, c_info, k_info):
        for k, v in info.items():
            assert k == "per_token" or torch.equal(st[k], v), k
    assert list(st) == [
        "clip/ratio_low",
        "clip/ratio_high",
        "clip/region",
        "ratio/mean",
        "ratio/min",
        "ratio/max",
        "kl/old",
        "loss/policy",
        "loss/kl",
        "clip/delta",
        "kl",
        "kl/k1",
        "kl/k2",
        "kl/k3",
        "per_token",
    ]


def test_policy_loss_options_are_keyword_only():
    z = torch.zeros(1, 2)
    with pytest.raises(TypeError):
        policy_loss(z, z, torch.zeros(1), torch.ones(1, 2), "dapo")


def test_padding_garbage_does_not_reach_the_loss():
    nan, inf = float("nan"), float("inf")
    m = torch.tensor([[1.0, 1.0, 0.0]])
    lp = torch.tensor([[-0.5, -1.0, -inf]], requires_grad=True)
    clean, st = policy_loss(
        lp,
        torch.tensor([[-0.6, -1.1, nan]]),
        torch.tensor([1.0]),
        m,
        importance_sampling_level="sequence",
        ref_logp=torch.tensor([[-0.4, -1.2, nan]]),
        beta=0.04,
    )
    (g,) = torch.autograd.grad(clean, lp)  # was NaN (loss and gradient) before the fix
    assert torch.isfinite(clean) and torch.isfinite(g).all() and g[0, 2] == 0
    assert all(torch.isfinite(v).all() for k, v in st.items() if k != "per_token")


# ---------------------------------------------------------------- autograd identities


def batch(seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    logp = torch.randn(3, 4, generator=g, dtype=dtype).requires_grad_()
    return logp, torch.randn(3, generator=g, dtype=dtype)


@pytest.mark.parametrize("loss_type", ["grpo", "bnpo", "dr_grpo", "dapo", "cispo"])
@pytest.mark.parametrize("level", ["token", "sequence"])
def test_at_ratio_one_clip_gradient_is_the_policy_gradient(loss_type, level):
    logp, adv = batch()
    loss, _ = policy_loss(
        logp,
        logp.detach(),
        adv,
        MASK,
        loss_type=loss_type,
        importance_sampling_level=level,
        **kwargs_for(loss_type),
    )
    (g,) = torch.autograd.grad(loss, logp)
    pg = -(token_weights(MASK, loss_type) * adv[:, None] * logp).sum()  # plain REINFORCE form
    (g_pg,) = torch.autograd.grad(pg, logp)
    torch.testing.assert_close(g, g_pg)


def test_clipped_tokens_get_no_gradient():
    logp = torch.zeros(1, 2, requires_grad=True)
    old = torch.tensor([[-1.0, 0.0]])  # ratio e > 1.2 on token 0, 1 on token 1
    loss, _ = policy_loss(logp, old, torch.tensor([1.0]), torch.ones(1, 2))
    (g,) = torch.autograd.grad(loss, logp)
    torch.testing.assert_close(g, torch.tensor([[0.0, -0.5]]))


@pytest.mark.parametrize("estimator", ["k1", "k2", "k3", "k3_st"])
def test_is_corrected_kl_term_has_the_reverse_kl_gradient_off_policy(estimator):
    """sum_y pi_old(y) grad(KL term) == grad KL(pi || pi_ref) exactly (categorical, V = 6)."""
    g = torch.Generator().manual_seed(3)
    theta = torch.randn(6, generator=g, dtype=torch.float64).requires_grad_()
    ref_logits = torch.randn(6, generator=g, dtype=torch.float64)
    old = (theta.detach() + torch.randn(6, generator=g, dtype=torch.float64)).log_softmax(-1)
    logp, ref = theta.log_softmax(-1), ref_logits.log_softmax(-1)
    term, _ = kl_penalty(logp, ref, (logp - old).exp(), torch.ones_like(logp), estimator=estimator)
    (grad,) = torch.autograd.grad((old.exp() * term).sum(), theta)
    (g_true,) = torch.autograd.grad(kl_exact(theta, ref_logits), theta)
    torch.testing.assert_close(grad, g_true)


def test_kl_in_the_loss_and_the_is_correction():
    logp, adv = batch(1)
    ref = logp.detach() + 0.5
    base, _ = policy_loss(logp, logp.detach(), adv, MASK)
    with_kl, st = policy_loss(logp, logp.detach(), adv, MASK, ref_logp=ref, beta=0.1)
    k3 = math.exp(0.5) - 1 - 0.5
    assert st["kl"].item() == pytest.approx(k3) and st["kl/k3"].item() == pytest.approx(k3)
    assert st["kl/k1"].item() == pytest.approx(-0.5) and st["kl/k2"].item() == pytest.approx(0.125)
    assert (with_kl - base).item() == pytest.approx(0.1 * k3)  # grpo weights sum to 1
    plain, _ = policy_loss(
        logp, logp.detach(), adv, MASK, ref_logp=ref, beta=0.1, kl_is_correction=False
    )
    assert plain.item() == pytest.approx(with_kl.item())  # same value at ratio 1 ...
    (g1,) = torch.autograd.grad(with_kl, logp)
    (g2,) = torch.autograd.grad(plain, logp)
    # ... but the corrected gradient has the extra beta * w * k3 * grad log pi term
    torch.testing.assert_close(g1 - g2, 0.1 * token_weights(MASK, "grpo").double() * k3)


def test_beta_zero_with_ref_only_reports_kl():
    logp, adv = batch(2)
    a, _ = policy_loss(logp, logp.detach(), adv, MASK)
    b, st = policy_loss(logp, logp.detach(), adv, MASK, ref_logp=logp.detach() - 1)
    assert a.item() == b.item() and st["loss/kl"] == 0 and st["kl"] > 0


# ---------------------------------------------------------------- extremes and errors


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
@pytest.mark.parametrize("estimator", ["k1", "k2", "k3", "k3_st"])
def test_extreme_inputs_are_finite(loss_type, estimator):
    logp = torch.tensor([[0.0, -100.0, -50.0], [-100.0, 0.0, 0.0]], requires_grad=True)
    old = torch.tensor([[-100.0, 0.0, -50.0], [0.0, -100.0, 0.0]])
    ref = torch.tensor([[-100.0, 0.0, 0.0], [0.0, -100.0, 0.0]])
    for level in ("token", "sequence"):
        for mask in (torch.ones(2, 3), torch.zeros(2, 3), torch.tensor([[1.0, 0, 0], [0, 0, 0]])):
            loss, st = policy_loss(
                logp,
                old,
                torch.tensor([1e3, -1e3]),
                mask,
                loss_type=loss_type,
                importance_sampling_level=level,
                ref_logp=ref,
                beta=0.04,
                kl_estimator=estimator,
                **kwargs_for(loss_type),
            )
            (g,) = torch.autograd.grad(loss, logp)
            assert torch.isfinite(loss) and torch.isfinite(g).all()
            assert all(torch.isfinite(v).all() for k, v in st.items() if k != "per_token")
            if mask.sum() == 0:
                assert loss.item() == 0 and st["ratio/mean"] == 1


def test_bad_arguments_raise_with_the_fix():
    logp, adv = torch.zeros(2, 3), torch.zeros(2)
    m = torch.ones(2, 3)
    with pytest.raises(ValueError, match="loss_type"):
        policy_loss(logp, logp, adv, m, loss_type="ppo2")
    with pytest.raises(ValueError, match="importance_sampling_level"):
        policy_loss(logp, logp, adv, m, importance_sampling_level="group")
    with pytest.raises(ValueError, match="5.0"):
        policy_loss(logp, logp, adv, m, loss_type="cispo")
    with pytest.raises(ValueError, match="ref_logp"):
        policy_loss(logp, logp, adv, m, beta=0.1)
    with pytest.raises(ValueError, match="kl_estimator"):
        policy_loss(logp, logp, adv, m, ref_logp=logp, beta=0.1, kl_estimator="k9")
    with pytest.raises(ValueError, match="advantages"):
        policy_loss(logp, logp, torch.zeros(3), m)
    with pytest.raises(ValueError, match=r"\[B, T\]"):
        policy_loss(logp, logp[:, :2], adv, m)


# ---------------------------------------------------------------- value, DPO, Bradley-Terry


def test_value_loss_by_hand():
    v, old, ret = torch.tensor([[1.0, 0.0]]), torch.zeros(1, 2), torch.tensor([[1.0, 1.0]])
    loss, st = value_loss(v, old, ret, torch.ones(1, 2), clip=0.5)
    assert loss.item() == pytest.approx(0.5 * (0.25 + 1.0) / 2)
    assert st["vf/clipfrac"].item() == pytest.approx(0.5)
    loss, st = value_loss(v, old, ret, torch.ones(1, 2), clip=None)
    assert loss.item() == pytest.approx(0.5 * (0 + 1) / 2) and st["vf/clipfrac"] == 0
    loss, st = value_loss(ret, old, ret, torch.ones(1, 2) * torch.tensor([[1.0, 0.0]]), clip=None)
    assert loss == 0
    r = torch.tensor([[1.0, 2.0, 3.0]])
    assert value_loss(r, r, r, torch.ones(1, 3))[1]["vf/explained_var"] == pytest.approx(1.0)
    loss, _ = value_loss(torch.zeros(1, 2), old, ret, torch.zeros(1, 2))
    assert torch.isfinite(loss) and loss == 0


def test_dpo_at_equal_log_ratios_is_ln2():
    lp = torch.tensor([-3.0, -7.0])
    loss, st = dpo_loss(lp, lp - 1, lp + 2, lp + 1, beta=0.3)  # both log-ratios are -2
    assert loss.item() == pytest.approx(math.log(2))
    assert st["rewards/margins"] == 0 and st["rewards/accuracies"] == 0


def test_dpo_by_hand_and_gradient():
    c = torch.tensor([0.0], requires_grad=True)
    loss, st = dpo_loss(c, torch.tensor([0.0]), torch.tensor([-1.0]), torch.tensor([1.0]), beta=0.5)
    # h = 1 - (-1) = 2: -log sigma(1)
    assert loss.item() == pytest.approx(-math.log(1 / (1 + math.exp(-1))))
    assert st["rewards/chosen"].item() == pytest.approx(0.5)
    assert st["rewards/rejected"].item() == pytest.approx(-0.5)
    assert st["rewards/margins"].item() == pytest.approx(1.0) and st["rewards/accuracies"] == 1
    (g,) = torch.autograd.grad(loss, c)  # d/dc = -beta sigma(-beta h)
    assert g.item() == pytest.approx(-0.5 / (1 + math.exp(1)))
    ipo, _ = dpo_loss(
        torch.tensor([0.0]),
        torch.tensor([0.0]),
        torch.tensor([-1.0]),
        torch.tensor([1.0]),
        beta=0.5,
        loss_type="ipo",
    )
    assert ipo.item() == pytest.approx((2 - 1) ** 2)
    big = torch.tensor([1e4])
    assert torch.isfinite(dpo_loss(-big, big, big, -big, beta=1.0)[0])
    with pytest.raises(ValueError, match="sigmoid"):
        dpo_loss(c, c, c, c, beta=0.1, loss_type="hinge2")


def test_bradley_terry():
    loss, st = bradley_terry_loss(torch.tensor([2.0, 0.0]), torch.tensor([0.0, 0.0]))
    assert loss.item() == pytest.approx((math.log1p(math.exp(-2)) + math.log(2)) / 2)
    assert st["accuracy"] == 0.5 and st["margin"] == 1.0
    loss, _ = bradley_terry_loss(
        torch.tensor([1.0]), torch.tensor([0.0]), margin=torch.tensor([1.0])
    )
    assert loss.item() == pytest.approx(math.log(2))
    assert torch.isfinite(bradley_terry_loss(torch.tensor([-1e4]), torch.tensor([1e4]))[0])


def test_single_token_sequences():
    logp = torch.tensor([[-0.5], [-2.0]], requires_grad=True)
    old = logp.detach() + torch.tensor([[0.1], [-0.1]])
    for lt in LOSS_TYPES:
        for level in ("token", "sequence"):
            loss, st = policy_loss(
                logp,
                old,
                torch.tensor([1.0, -1.0]),
                torch.ones(2, 1),
                loss_type=lt,
                importance_sampling_level=level,
                ref_logp=logp.detach() - 1,
                beta=0.1,
                **kwargs_for(lt),
            )
            (g,) = torch.autograd.grad(loss, logp)
            assert torch.isfinite(loss) and torch.isfinite(g).all() and (g != 0).all()
            assert st["kl/k1"].item() == pytest.approx(1.0)


def test_importance_ratio_reports_approx_kl_to_pi_old():
    # KL(pi_old || pi_theta) ~ E_old[(rho - 1) - log rho] (cleanrl's approx_kl), 0 when equal
    old = torch.tensor([[-1.0, -2.0, -3.0]])
    logp = torch.tensor([[-1.5, -1.0, float("nan")]])
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    _, info = importance_ratio(logp, old, mask)
    lr = torch.tensor([-0.5, 1.0])
    assert torch.allclose(info["kl/old"], ((lr.exp() - 1) - lr).mean())
    assert importance_ratio(old, old, mask)[1]["kl/old"] == 0
