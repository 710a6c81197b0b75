"""The token surrogate as the sequence surrogate's first-order approximation
(labkit.core.first_order): equal gradients at pi = mu, a hand-computed 2-token case away from it,
the sequence ratio as the product of the token ratios, the gap linear in the drift."""

import math

import pytest
import torch

from labkit.core.first_order import (
    gradient_agreement,
    sequence_ratio,
    sequence_surrogate,
    token_surrogate,
)


def logp_grads(logp, old_logp, adv, mask):
    """d(-J^token)/d logp and d(-J^seq)/d logp [B, T]."""
    out = []
    for fn in (token_surrogate, sequence_surrogate):
        lp = logp.detach().clone().requires_grad_()
        (g,) = torch.autograd.grad(fn(lp, old_logp, adv, mask)[0], lp)
        out.append(g)
    return out


def test_at_pi_equal_mu_the_gradients_are_equal():
    torch.manual_seed(0)
    B, T = 6, 5
    logp = torch.randn(B, T).double().clamp(max=-0.1)
    adv, mask = torch.randn(B).double(), (torch.rand(B, T) > 0.3).double()
    g_tok, g_seq = logp_grads(logp, logp, adv, mask)
    # closed form at rho = 1: both are -A_i / B on every valid token, 0 elsewhere
    expected = -adv[:, None] / B * mask
    torch.testing.assert_close(g_tok, expected, rtol=0, atol=1e-15)
    torch.testing.assert_close(g_seq, expected, rtol=0, atol=1e-15)


def test_at_pi_equal_mu_parameter_gradients_agree():
    """Through a model: a linear softmax policy's parameter gradients of both losses coincide."""
    torch.manual_seed(1)
    B, T, V, D = 4, 3, 5, 7
    x, y = torch.randn(B, T, D).double(), torch.randint(0, V, (B, T))
    W = torch.randn(D, V, dtype=torch.float64, requires_grad=True)
    logp = torch.log_softmax(x @ W, -1).gather(-1, y[..., None]).squeeze(-1)  # [B, T]
    adv, mask = torch.tensor([1.0, -1.0, 0.5, -0.5]).double(), torch.ones(B, T).double()
    (g_tok,) = torch.autograd.grad(
        token_surrogate(logp, logp.detach(), adv, mask)[0], W, retain_graph=True
    )
    (g_seq,) = torch.autograd.grad(sequence_surrogate(logp, logp.detach(), adv, mask)[0], W)
    st = gradient_agreement(g_tok.reshape(-1), g_seq.reshape(-1))
    assert float(st["cos"]) == pytest.approx(1.0, abs=1e-12)
    assert float(st["rel_err"]) < 1e-12


def test_two_tokens_away_from_one_by_hand():
    """rho = (2, 1/2), A = 1, B = 1: J^token = 2.5, J^seq = 1; per-token gradients of the losses:
    token -(rho_1, rho_2) = -(2, 0.5), sequence -(P, P) = -(1, 1) with P = rho_1 rho_2 = 1."""
    logp = torch.log(torch.tensor([[0.5, 0.25]]))
    old = torch.log(torch.tensor([[0.25, 0.5]]))
    adv, mask = torch.ones(1), torch.ones(1, 2)
    assert float(token_surrogate(logp, old, adv, mask)[0]) == pytest.approx(-2.5)
    loss, st = sequence_surrogate(logp, old, adv, mask)
    assert float(loss) == pytest.approx(-1.0)
    assert float(st["ratio/seq_max"]) == pytest.approx(1.0)
    g_tok, g_seq = logp_grads(logp, old, adv, mask)
    torch.testing.assert_close(g_tok, torch.tensor([[-2.0, -0.5]]))
    torch.testing.assert_close(g_seq, torch.tensor([[-1.0, -1.0]]))
    st = gradient_agreement(g_tok.reshape(-1), g_seq.reshape(-1))
    assert float(st["cos"]) == pytest.approx(2.5 / math.sqrt(4.25 * 2))  # 0.8575
    assert float(st["rel_err"]) == pytest.approx(math.sqrt(1.25 / 2))  # |(-1, 0.5)| / sqrt 2
    assert float(st["norm_ratio"]) == pytest.approx(math.sqrt(4.25 / 2))


def test_the_sequence_ratio_is_the_product_of_token_ratios():
    torch.manual_seed(2)
    logp, old = torch.randn(5, 4) * 0.3 - 1, torch.randn(5, 4) * 0.3 - 1
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0], [1, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 0]])
    logp[mask == 0] = float("nan")  # what padding holds never reaches the product
    rho = torch.exp(logp - old)
    expected = torch.tensor(
        [math.prod(float(r) for r, m in zip(rho[i], mask[i]) if m) for i in range(5)]
    )  # the empty product is 1
    torch.testing.assert_close(sequence_ratio(logp, old, mask), expected)
    adv = torch.randn(5)
    loss, st = sequence_surrogate(logp, old, adv, mask)
    torch.testing.assert_close(loss, -(expected * adv).mean())
    assert float(st["ratio/seq_max"]) == pytest.approx(float(expected[mask.any(-1)].max()))
    assert float(st["ratio/seq_min"]) == pytest.approx(float(expected[mask.any(-1)].min()))


def test_the_gap_is_first_order_in_the_drift():
    """log rho_t = eps d_t: (g_tok - g_seq)_t / eps -> -A (d_t - sum_s d_s) / B as eps -> 0."""
    torch.manual_seed(3)
    B, T = 3, 4
    old = torch.randn(B, T).double() - 1
    d, adv, mask = torch.randn(B, T).double(), torch.randn(B).double(), torch.ones(B, T).double()
    limit = -adv[:, None] * (d - d.sum(-1, keepdim=True)) / B
    for eps in (1e-3, 1e-5):
        g_tok, g_seq = logp_grads(old + eps * d, old, adv, mask)
        torch.testing.assert_close((g_tok - g_seq) / eps, limit, rtol=0, atol=50 * eps)


def test_token_surrogate_value_and_drift():
    logp = torch.log(torch.tensor([[0.5, 0.25], [0.2, 0.9]]))
    old = torch.log(torch.tensor([[0.25, 0.5], [0.2, 0.9]]))
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0]])
    loss, st = token_surrogate(logp, old, torch.tensor([1.0, -2.0]), mask)
    assert float(loss) == pytest.approx(-(2.5 * 1.0 + 1.0 * -2.0) / 2)
    # k3 of KL(mu || pi) on the 3 valid tokens: rho - 1 - log rho for rho = 2, 1/2, 1
    k3 = [(2 - 1 - math.log(2)), (0.5 - 1 - math.log(0.5)), 0.0]
    assert float(st["kl/old"]) == pytest.approx(sum(k3) / 3)


def test_gradient_agreement_cases():
    g = torch.tensor([3.0, -4.0])
    st = gradient_agreement(g, g)
    assert [float(st[k]) for k in ("cos", "rel_err", "norm_ratio")] == [1.0, 0.0, 1.0]
    st = gradient_agreement(-g, g)
    assert [float(st[k]) for k in ("cos", "rel_err", "norm_ratio")] == [-1.0, 2.0, 1.0]
    # a zero reference (all advantages 0): nothing is measured, so NaN, never 0
    assert all(math.isnan(float(v)) for v in gradient_agreement(g, torch.zeros(2)).values())
    st = gradient_agreement(torch.zeros(2), g)
    assert math.isnan(float(st["cos"])) and [float(st["rel_err"]), float(st["norm_ratio"])] == [
        1,
        0,
    ]


def test_gradient_agreement_is_exact_over_a_million_fp32_entries():
    """An fp32 dot product over 1e6 entries is off by ~1e-5; the cosine is taken in float64."""
    g = torch.randn(1_000_000, generator=torch.Generator().manual_seed(0))
    assert float(gradient_agreement(g, g.clone())["cos"]) == pytest.approx(1.0, abs=1e-12)
