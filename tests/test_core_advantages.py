"""labkit.core.advantages: hand-computed values, REFERENCES.md numbers, GAE loop vs vectorised."""

import math

import pytest
import torch

from labkit.core.advantages import (
    discounted_returns,
    gae,
    group_advantages,
    reinforce_advantages,
    rloo_advantages,
    whiten,
)


def test_references_1001_population_and_unbiased():
    r = torch.tensor([1.0, 0.0, 0.0, 1.0])
    sign = torch.tensor([1.0, -1.0, -1.0, 1.0])
    torch.testing.assert_close(group_advantages(r, 4, std="population", eps=0.0), sign)
    # n-1 std = sqrt(1/3); 0.5 / sqrt(1/3) = sqrt(3)/2 = 0.866
    torch.testing.assert_close(group_advantages(r, 4, eps=0.0), sign * math.sqrt(3) / 2)
    torch.testing.assert_close(group_advantages(r, 4), sign * 0.5 / (1 / math.sqrt(3) + 1e-4))


def test_matches_trl_style_formula_on_random_groups():
    # TRL 1.16 (_generate_and_score_completions): mean/std per group, repeat_interleave,
    # (r - mean) / (std + 1e-4) with torch's default (n-1) std.
    torch.manual_seed(0)
    r, G = torch.randn(24), 6
    mean = r.view(-1, G).mean(1).repeat_interleave(G)
    std = r.view(-1, G).std(1).repeat_interleave(G)
    torch.testing.assert_close(group_advantages(r, G), (r - mean) / (std + 1e-4))
    torch.testing.assert_close(group_advantages(r, G, "batch"), (r - mean) / (r.std() + 1e-4))
    torch.testing.assert_close(group_advantages(r, G, "none"), r - mean)


def test_batch_scaling_by_hand():
    # group means 0.5 and 3; batch [1, 0, 3, 3] has mean 1.75, n-1 variance 6.75 / 3 = 2.25
    r = torch.tensor([1.0, 0.0, 3.0, 3.0])
    out = group_advantages(r, 2, scale_rewards="batch", eps=0.0)
    torch.testing.assert_close(out, torch.tensor([1 / 3, -1 / 3, 0.0, 0.0]))


def test_zero_spread_groups_give_zeros_never_nan():
    r = torch.tensor([0.7, 0.7, 0.7, 1.0, 0.0, 0.5])
    for scale in ("group", "batch", "none"):
        for std in ("unbiased", "population"):
            out = group_advantages(r, 3, scale, std)
            assert torch.isfinite(out).all()
            assert torch.equal(out[:3], torch.zeros(3))
    # G = 1: the n-1 std is undefined; we give 0 advantages, not NaN
    assert torch.equal(group_advantages(torch.tensor([1.0, 2.0]), 1), torch.zeros(2))
    assert torch.equal(group_advantages(torch.ones(4), 4, eps=0.0), torch.zeros(4))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("eps", [0.0, 1e-4])
def test_ties_broken_by_rounding_give_exactly_zero(dtype, eps):
    # mean([0.1] * 7) is not 0.1 in float32: before, every advantage was -0.93 with eps = 0
    for v in (0.1, 0.3, 0.7, 0.9, 1 / 3, 2 / 3, 1.1, 123.456):
        for G in range(2, 8):
            for scale in ("group", "batch", "none"):
                out = group_advantages(torch.full((G,), v, dtype=dtype), G, scale, eps=eps)
                assert torch.equal(out, torch.zeros(G, dtype=dtype)), (v, G, scale)
    r = torch.tensor([0.1 + 0.2, 0.3, 0.3, 0.0, 1.0, 0.25], dtype=torch.float64)  # 1 ulp apart
    out = group_advantages(r, 3, eps=eps)
    assert torch.equal(out[:3], torch.zeros(3, dtype=torch.float64)) and (out[3:] != 0).all()
    # a difference the dtype resolves is kept: the z-score is scale-free
    tiny = group_advantages(torch.tensor([1.0, 1.0 + 1e-12], dtype=torch.float64), 2, eps=0.0)
    torch.testing.assert_close(tiny, torch.tensor([-1.0, 1.0], dtype=torch.float64) / 2**0.5)


def test_rloo_by_hand_and_identity():
    r = torch.tensor([1.0, 0.0, 0.0, 1.0, 2.0, 4.0])
    # group 1: 1 - (0+0)/2 = 1, 0 - (1+0)/2 = -0.5, ...; group 2: 1 - 3, 2 - 2.5, 4 - 1.5
    expected = torch.tensor([1.0, -0.5, -0.5, -2.0, -0.5, 2.5])
    torch.testing.assert_close(rloo_advantages(r, 3), expected)
    G = 3
    torch.testing.assert_close(
        rloo_advantages(r, G), G / (G - 1) * group_advantages(r, G, scale_rewards="none")
    )
    with pytest.raises(ValueError, match="at least 2"):
        rloo_advantages(r, 1)


def test_reinforce_baselines():
    r = torch.tensor([3.0, 1.0, 0.0, 0.0])
    torch.testing.assert_close(reinforce_advantages(r), r)
    torch.testing.assert_close(reinforce_advantages(r, 4, "batch_mean"), r - 1.0)
    torch.testing.assert_close(
        reinforce_advantages(r, 2, "group_mean"), torch.tensor([1.0, -1, 0, 0])
    )
    torch.testing.assert_close(
        reinforce_advantages(r, 2, "leave_one_out"), torch.tensor([2.0, -2, 0, 0])
    )


def test_bad_options_raise_naming_choices():
    r = torch.zeros(4)
    with pytest.raises(ValueError, match="scale_rewards"):
        group_advantages(r, 2, scale_rewards="sequence")
    with pytest.raises(ValueError, match="std"):
        group_advantages(r, 2, std="biased")
    with pytest.raises(ValueError, match="baseline"):
        reinforce_advantages(r, 2, "median")
    with pytest.raises(ValueError, match="divisible"):
        group_advantages(r, 3)


# ---------------------------------------------------------------- GAE and returns


def gae_by_definition(r, v, mask, gamma, lam, next_value):
    """Python loops over rows and steps: A_t = sum_l (gamma lam)^l delta_{t+l} (the definition)."""
    B, T = r.shape
    A = torch.zeros(B, T, dtype=torch.float64)
    for b in range(B):
        L = int(mask[b].sum())
        V = [float(v[b, t]) for t in range(L)] + [float(next_value[b])]
        delta = [float(r[b, t]) + gamma * V[t + 1] - V[t] for t in range(L)]
        for t in range(L):
            A[b, t] = sum((gamma * lam) ** k * delta[t + k] for k in range(L - t))
    return A


def random_episodes(seed=0, B=5, T=7):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([7, 3, 1, 0, 5])
    mask = (torch.arange(T) < lengths[:, None]).float()
    r = torch.randn(B, T, generator=g)
    v = torch.randn(B, T, generator=g)
    return r, v, mask, torch.randn(B, generator=g)


@pytest.mark.parametrize("gamma,lam", [(0.99, 0.95), (0.9, 0.0), (1.0, 1.0), (0.5, 0.7)])
def test_gae_loop_equals_vectorised(gamma, lam):
    r, v, mask, nv = random_episodes()
    A, ret = gae(r, v, mask, gamma, lam, next_value=nv)
    expected = gae_by_definition(r, v, mask, gamma, lam, nv).float()
    torch.testing.assert_close(A, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ret, (expected + v) * mask, atol=1e-5, rtol=1e-5)
    assert torch.equal(A * (1 - mask), torch.zeros_like(A))


def test_gae_hand_computed():
    # delta_1 = 2 + .9*2 - 1 = 2.8, delta_0 = 1 + .9*1 - .5 = 1.4, A_0 = 1.4 + .45*2.8 = 2.66
    A, ret = gae(
        torch.tensor([[1.0, 2.0]]),
        torch.tensor([[0.5, 1.0]]),
        torch.ones(1, 2),
        0.9,
        0.5,
        next_value=torch.tensor([2.0]),
    )
    torch.testing.assert_close(A, torch.tensor([[2.66, 2.8]]))
    torch.testing.assert_close(ret, torch.tensor([[3.16, 3.8]]))


def test_gae_lam1_is_mc_return_minus_values_and_lam0_is_td_error():
    r, v, mask, _ = random_episodes(1)
    gamma = 0.9
    A1, ret1 = gae(r, v, mask, gamma, 1.0)  # terminal: next_value = 0
    G = discounted_returns(r, mask, gamma)
    torch.testing.assert_close(A1, (G - v) * mask)
    torch.testing.assert_close(ret1, G)
    A0, _ = gae(r, v, mask, gamma, 0.0)
    v_next = torch.cat([v[:, 1:], torch.zeros(5, 1)], 1) * torch.cat(
        [mask[:, 1:], torch.zeros(5, 1)], 1
    )
    torch.testing.assert_close(A0, (r + gamma * v_next - v) * mask)


def test_gae_bootstrap_enters_only_at_last_valid_step():
    mask = torch.tensor([[1.0, 1.0, 0.0]])
    A, _ = gae(torch.zeros(1, 3), torch.zeros(1, 3), mask, 1.0, 0.0, next_value=torch.tensor([3.0]))
    torch.testing.assert_close(A, torch.tensor([[0.0, 3.0, 0.0]]))


def test_discounted_returns_by_hand_and_edges():
    r = torch.tensor([[1.0, 2.0, 3.0], [5.0, 9.0, 9.0]])
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]])
    out = discounted_returns(r, mask, 0.5)
    torch.testing.assert_close(out, torch.tensor([[1 + 1 + 0.75, 2 + 1.5, 3.0], [5.0, 0, 0]]))
    assert torch.equal(discounted_returns(r, torch.zeros(2, 3), 0.9), torch.zeros(2, 3))
    with pytest.raises(ValueError, match="prefix"):
        discounted_returns(r, torch.tensor([[0, 1, 1], [1, 1, 1]]), 0.9)


def test_gae_empty_and_single_token_are_finite():
    A, ret = gae(torch.ones(2, 1), torch.ones(2, 1), torch.tensor([[1.0], [0.0]]), 0.99, 0.95)
    torch.testing.assert_close(A, torch.tensor([[0.0], [0.0]]))  # 1 + 0 - 1
    torch.testing.assert_close(ret, torch.tensor([[1.0], [0.0]]))


def test_whiten():
    torch.manual_seed(0)
    x, mask = torch.randn(3, 6) * 4 + 2, (torch.rand(3, 6) > 0.3).float()
    w = whiten(x, mask)
    valid = w[mask.bool()]
    torch.testing.assert_close(valid.mean(), torch.tensor(0.0), atol=1e-6, rtol=0)
    torch.testing.assert_close(valid.std(), torch.tensor(1.0), atol=1e-6, rtol=0)
    assert torch.equal(w[~mask.bool()], torch.zeros_like(w[~mask.bool()]))
    keep = whiten(x, mask, shift_mean=False)[mask.bool()]
    torch.testing.assert_close(keep.mean(), x[mask.bool()].mean(), atol=1e-5, rtol=0)
    pop = whiten(x, mask, std="population")[mask.bool()]
    torch.testing.assert_close(pop.pow(2).mean(), torch.tensor(1.0), atol=1e-5, rtol=0)
    assert torch.isfinite(whiten(x, torch.zeros(3, 6))).all()
    assert torch.equal(whiten(torch.tensor([5.0]), torch.tensor([1.0])), torch.tensor([0.0]))


def test_dtypes_are_kept():
    r, v, mask, nv = random_episodes(2)
    A, ret = gae(r.double(), v.double(), mask.bool(), 0.97, 0.9, next_value=nv.double())
    assert A.dtype == ret.dtype == torch.float64
    expected = gae_by_definition(r.double(), v.double(), mask, 0.97, 0.9, nv.double())
    torch.testing.assert_close(A, expected, atol=1e-12, rtol=1e-12)
    assert discounted_returns(r.double(), mask, 0.9).dtype == torch.float64
    assert group_advantages(torch.tensor([1, 0, 0, 1]), 4).dtype == torch.float32  # ints -> float
    assert group_advantages(torch.ones(4, dtype=torch.float64), 2).dtype == torch.float64
    assert reinforce_advantages(torch.tensor([1.0, 0.0]), 2, "batch_mean").dtype == torch.float32
