"""Properties of labkit.core over random masks, lengths, dtypes and extreme values (hypothesis).

For every masked function: garbage at padding (NaN, +-inf, 1e30) gives *exactly* the outputs
(and gradients) of the clean input; outputs are finite when the valid inputs are finite (log-ratios
up to +-1e4); float64 in gives float64 out, fp16/bf16 are lifted to float32. Deterministic
(``derandomize``) and without a database, so CI sees the same examples every run.
"""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from labkit.core import (
    bradley_terry_loss,
    discounted_returns,
    dpo_loss,
    entropy_from_logits,
    gae,
    group_advantages,
    kl_estimate,
    kl_exact,
    kl_k3,
    kl_k3_is,
    masked_mean,
    masked_sum,
    policy_loss,
    reinforce_advantages,
    rloo_advantages,
    token_logprobs,
    value_loss,
    whiten,
)
from labkit.core.options import BASELINES, KL_ESTIMATORS, LOSS_TYPES

SETTINGS = settings(max_examples=50, deadline=None, derandomize=True, database=None)
DTYPES = st.sampled_from([torch.float32, torch.float64])
GARBAGE = [math.nan, math.inf, -math.inf, 1e30, -1e30]


@st.composite
def masks(draw, prefix=False, B=(1, 4), T=(1, 6)):
    """[B, T] 0/1 mask, any dtype; ``prefix``: valid steps first (padded episodes)."""
    b, t = draw(st.integers(*B)), draw(st.integers(*T))
    if prefix:
        lengths = torch.tensor(draw(st.lists(st.integers(0, t), min_size=b, max_size=b)))
        mask = torch.arange(t) < lengths[:, None]  # [B, T]
    else:
        mask = torch.from_numpy(draw(hnp.arrays(np.bool_, (b, t))))  # [B, T]
    return mask.to(draw(st.sampled_from([torch.bool, torch.long, torch.float32])))


def values(draw, shape, lo, hi, dtype):
    """Finite values in [lo, hi], edges included (hypothesis favours them)."""
    elems = st.floats(lo, hi, allow_nan=False, allow_infinity=False, width=32)
    return torch.from_numpy(draw(hnp.arrays(np.float32, shape, elements=elems))).to(dtype)


def dirty(draw, x, valid):
    """x with garbage (NaN, +-inf, +-1e30) wherever ``valid`` is False."""
    junk = torch.from_numpy(
        draw(hnp.arrays(np.float64, tuple(x.shape), elements=st.sampled_from(GARBAGE)))
    )
    return torch.where(valid, x, junk.to(x.dtype))


def assert_same(clean, messy, dtype):
    """Exactly equal, finite, and of ``dtype`` (tensors, or dicts of them, recursively)."""
    if isinstance(clean, dict):
        assert clean.keys() == messy.keys()
        for k in clean:
            assert_same(clean[k], messy[k], dtype)
        return
    assert clean.dtype == messy.dtype == dtype, (clean.dtype, messy.dtype, dtype)
    assert torch.isfinite(clean).all() and torch.equal(clean, messy), (clean, messy)


# ---------------------------------------------------------------- policy loss


@pytest.mark.parametrize("level", ["token", "sequence"])
@pytest.mark.parametrize("loss_type", LOSS_TYPES)
@settings(SETTINGS, max_examples=20)
@given(
    st.data(),
    DTYPES,
    st.sampled_from(KL_ESTIMATORS),
    st.booleans(),
    st.sampled_from([None, 0.0, 0.04]),
)
def test_policy_loss_ignores_padding_and_stays_finite(
    loss_type, level, data, dtype, estimator, per_token_adv, beta
):
    mask = data.draw(masks())
    B, T = mask.shape
    valid = mask != 0
    logp, old = (values(data.draw, (B, T), -1e4, 0.0, dtype) for _ in range(2))  # log-ratio +-1e4
    ref = values(data.draw, (B, T), -1e4, 0.0, dtype)
    adv = values(data.draw, (B, T) if per_token_adv else (B,), -1e3, 1e3, dtype)
    kw = {
        "loss_type": loss_type,
        "importance_sampling_level": level,
        "kl_estimator": estimator,
        "kl_is_correction": data.draw(st.booleans()),
        "delta": data.draw(st.sampled_from([None, 2.0])),
        "epsilon_high": 5.0 if loss_type == "cispo" else None,
    }

    def run(lp, o, a, r):  # beta None: no ref_logp at all
        lp = lp.clone().requires_grad_()
        kl = {} if beta is None else {"ref_logp": r, "beta": beta}
        loss, stats = policy_loss(lp, o, a, mask, **kw, **kl)
        (grad,) = torch.autograd.grad(loss, lp)
        return {"loss": loss.detach(), "grad": grad, **stats}

    clean = run(logp, old, adv, ref)
    adv_valid = valid if per_token_adv else valid.any(-1)  # an empty row's advantage is padding too
    messy = run(
        *(dirty(data.draw, x, valid) for x in (logp, old)),
        dirty(data.draw, adv, adv_valid),
        dirty(data.draw, ref, valid),
    )
    assert_same(clean, messy, dtype)


@SETTINGS
@given(st.data(), DTYPES, st.sampled_from([None, -1]))
def test_masked_mean_and_sum_ignore_padding(data, dtype, dim):
    mask = data.draw(masks())
    x = values(data.draw, tuple(mask.shape), -1e4, 1e4, dtype)
    messy = dirty(data.draw, x, mask != 0)
    for fn in (masked_mean, masked_sum):
        assert_same(fn(x, mask, dim), fn(messy, mask, dim), dtype)


# ---------------------------------------------------------------- KL


@SETTINGS
@given(st.data(), DTYPES, st.sampled_from(KL_ESTIMATORS))
def test_kl_estimators_are_finite_at_extreme_log_ratios(data, dtype, estimator):
    mask = data.draw(masks())
    shape = tuple(mask.shape)
    logp, ref, old = (values(data.draw, shape, -1e4, 0.0, dtype).requires_grad_() for _ in range(3))
    for k in (
        kl_estimate(logp, ref, estimator),
        kl_k3_is(logp, ref, old),
        kl_k3(logp, ref, clamp=10.0),
    ):
        (g,) = torch.autograd.grad(k.sum(), logp)
        assert k.dtype == g.dtype == dtype and torch.isfinite(k).all() and torch.isfinite(g).all()
    # k3 >= 0 up to rounding: e^x - 1 - x is -6e-8 at x = 6e-8 in fp32 (expm1 would fix it, but
    # TRL computes exp(x) - x - 1 and parity wants the same bits)
    slack = 4 * torch.finfo(dtype).eps * (1 + (ref - logp).abs())
    assert (kl_k3(logp, ref) >= -slack).all() and (kl_k3(logp, ref, clamp=10.0) <= 10).all()
    valid = mask != 0  # a masked mean of the estimate ignores padding
    messy = [dirty(data.draw, x.detach(), valid) for x in (logp, ref)]
    assert_same(
        masked_mean(kl_estimate(logp, ref, estimator), mask),
        masked_mean(kl_estimate(*messy, estimator), mask),
        dtype,
    )


@st.composite
def top_k_logits(draw, dtype):
    """Logits [B, T, V] with -inf on a random part of the vocab (at least one entry kept)."""
    B, T, V = draw(st.integers(1, 3)), draw(st.integers(1, 3)), draw(st.integers(2, 6))
    logits = values(draw, (B, T, V), -1e4, 1e4, dtype)
    dropped = torch.from_numpy(draw(hnp.arrays(np.bool_, (B, T, V))))
    dropped[..., draw(st.integers(0, V - 1))] = False
    return logits.masked_fill(dropped, -math.inf), dropped


def support_only(fn, *logits):
    """fn applied to each position's finite vocab entries alone (the definition)."""
    B, T, _ = logits[0].shape
    out = torch.empty(B, T, dtype=logits[0].dtype)
    for b in range(B):
        for t in range(T):
            keep = torch.isfinite(logits[0][b, t])
            out[b, t] = fn(*(x[b, t][keep] for x in logits))
    return out


@SETTINGS
@given(st.data(), DTYPES)
def test_kl_exact_and_entropy_with_masked_vocab(data, dtype):
    logits, dropped = data.draw(top_k_logits(dtype))
    ref = values(data.draw, tuple(logits.shape), -1e4, 1e4, dtype)
    assert torch.isfinite(kl_exact(logits, ref)).all()  # pi_ref unmasked: finite too
    ref = ref.masked_fill(dropped, -math.inf)  # the same top-k on both: KL over that support
    logits.requires_grad_()
    for out, expected in (
        (kl_exact(logits, ref), support_only(kl_exact, logits.detach(), ref)),
        (entropy_from_logits(logits), support_only(entropy_from_logits, logits.detach())),
    ):
        (g,) = torch.autograd.grad(out.sum(), logits)
        assert out.dtype == dtype and torch.isfinite(out).all() and torch.isfinite(g).all()
        assert (g[dropped] == 0).all()  # no mass, no gradient
        torch.testing.assert_close(out.detach(), expected, atol=1e-4, rtol=1e-4)


@SETTINGS
@given(st.data(), DTYPES)
def test_token_logprobs_keep_float64_and_finite_for_kept_tokens(data, dtype):
    logits, dropped = data.draw(top_k_logits(dtype))
    ids = (~dropped).to(torch.float32).argmax(-1)  # [B, T]: a token top-k kept
    logp = token_logprobs(logits, ids, temperature=data.draw(st.sampled_from([0.7, 1.0])))
    assert logp.dtype == dtype and torch.isfinite(logp).all() and (logp <= 0).all()


# ---------------------------------------------------------------- advantages


@SETTINGS
@given(
    st.data(),
    DTYPES,
    st.integers(1, 6),
    st.integers(1, 4),
    st.sampled_from(["group", "batch", "none"]),
    st.sampled_from(["unbiased", "population"]),
    st.sampled_from([0.0, 1e-4]),
)
def test_group_advantages_finite_and_tied_groups_exactly_zero(data, dtype, G, n, scale, std, eps):
    r = values(data.draw, (n, G), -1e4, 1e4, dtype)
    tied = torch.tensor(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    r = torch.where(tied[:, None], r[:, :1], r).reshape(-1)  # some groups all equal
    adv = group_advantages(r, G, scale, std, eps)
    assert adv.dtype == dtype and torch.isfinite(adv).all()
    assert (adv.view(n, G)[tied] == 0).all()
    assert adv.view(n, G).sum(1).abs().max() <= 1e-3 * max(1.0, adv.abs().max())  # centred


@SETTINGS
@given(st.data(), DTYPES, st.integers(2, 6), st.integers(1, 4), st.sampled_from(BASELINES))
def test_rloo_and_reinforce_advantages_are_finite(data, dtype, G, n, baseline):
    r = values(data.draw, (n * G,), -1e4, 1e4, dtype)
    for adv in (rloo_advantages(r, G), reinforce_advantages(r, G, baseline)):
        assert adv.dtype == dtype and torch.isfinite(adv).all()


@SETTINGS
@given(st.data(), DTYPES, st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_gae_and_returns_ignore_padding(data, dtype, gamma, lam):
    mask = data.draw(masks(prefix=True))
    valid, shape = mask != 0, tuple(mask.shape)
    r, v = (values(data.draw, shape, -1e3, 1e3, dtype) for _ in range(2))
    nv = values(data.draw, shape[:1], -1e3, 1e3, dtype)
    mr, mv = dirty(data.draw, r, valid), dirty(data.draw, v, valid)
    clean = {"gae": gae(r, v, mask, gamma, lam, nv), "G": discounted_returns(r, mask, gamma)}
    messy = {"gae": gae(mr, mv, mask, gamma, lam, nv), "G": discounted_returns(mr, mask, gamma)}
    assert_same(
        {"A": clean["gae"][0], "R": clean["gae"][1], "G": clean["G"]},
        {"A": messy["gae"][0], "R": messy["gae"][1], "G": messy["G"]},
        dtype,
    )
    assert (clean["gae"][0][~valid] == 0).all() and (clean["G"][~valid] == 0).all()


@SETTINGS
@given(st.data(), DTYPES, st.booleans(), st.sampled_from(["unbiased", "population"]))
def test_whiten_ignores_padding(data, dtype, shift_mean, std):
    mask = data.draw(masks())
    x = values(data.draw, tuple(mask.shape), -1e4, 1e4, dtype)
    out = whiten(x, mask, shift_mean, std)
    assert_same(out, whiten(dirty(data.draw, x, mask != 0), mask, shift_mean, std), dtype)
    assert (out[mask == 0] == 0).all()


# ---------------------------------------------------------------- value, DPO, Bradley-Terry


@SETTINGS
@given(st.data(), DTYPES, st.sampled_from([None, 0.2]))
def test_value_loss_ignores_padding(data, dtype, clip):
    mask = data.draw(masks())
    valid, shape = mask != 0, tuple(mask.shape)
    v, old, ret = (values(data.draw, shape, -1e3, 1e3, dtype) for _ in range(3))

    def run(v, old, ret):
        v = v.clone().requires_grad_()
        loss, stats = value_loss(v, old, ret, mask, clip)
        return {"grad": torch.autograd.grad(loss, v)[0], **stats}

    assert_same(run(v, old, ret), run(*(dirty(data.draw, x, valid) for x in (v, old, ret))), dtype)


@SETTINGS
@given(
    st.data(), DTYPES, st.integers(1, 4), st.sampled_from(["sigmoid", "ipo"]), st.floats(0.01, 1.0)
)
def test_preference_losses_finite_and_keep_dtype(data, dtype, B, loss_type, beta):
    x = [values(data.draw, (B,), -1e4, 0.0, dtype).requires_grad_() for _ in range(4)]
    loss, stats = dpo_loss(*x, beta=beta, loss_type=loss_type)
    scores = [values(data.draw, (B,), -1e4, 1e4, dtype).requires_grad_() for _ in range(2)]
    bt_loss, bt_stats = bradley_terry_loss(*scores, margin=values(data.draw, (B,), -1, 1, dtype))
    for out, inputs in ((loss, x), (bt_loss, scores)):
        grads = torch.autograd.grad(out, inputs)
        assert all(g.dtype == dtype and torch.isfinite(g).all() for g in grads)
    for v in (loss, bt_loss, *stats.values(), *bt_stats.values()):
        assert v.dtype == dtype and torch.isfinite(v).all()


# ---------------------------------------------------------------- half precision is lifted


@pytest.mark.parametrize("half", [torch.float16, torch.bfloat16])
def test_half_precision_is_computed_in_float32(half):
    x = torch.tensor([[-30.0, -0.5, 0.0]], dtype=half)  # log r = 30: e^20 overflows fp16
    mask = torch.tensor([[1, 1, 0]])
    outs = [
        kl_k3(x, torch.zeros_like(x)),
        kl_exact(x, x.flip(-1)),
        entropy_from_logits(x[None]),
        token_logprobs(x[None], torch.zeros(1, 1, dtype=torch.long)),
        masked_mean(x, mask),
        whiten(x, mask),
        policy_loss(x, x.flip(-1), torch.ones(1, dtype=half), mask)[0],
        group_advantages(x[0], 3),
        value_loss(x, x, x.flip(-1), mask)[0],
        dpo_loss(x[0], x[0], x[0], x[0], beta=0.1)[0],
    ]
    for out in outs:
        assert out.dtype == torch.float32 and torch.isfinite(out).all()


def test_entropy_in_chunks_equals_one_pass_and_bounds_its_memory(monkeypatch):
    """Chunks of positions give the one-pass entropy and gradient; the no-grad call's peak
    temporaries stay near one chunk (an H200 ran out of memory on the one-pass version)."""
    from labkit.core import logprobs
    from labkit.models.memory import peak_cpu_memory

    g = torch.Generator().manual_seed(0)
    logits = torch.randn(4, 50, 1000, generator=g, requires_grad=True)  # [B, T, V]
    whole = entropy_from_logits(logits, 0.7)
    (grad_whole,) = torch.autograd.grad(whole.sum(), logits)
    monkeypatch.setattr(logprobs, "ENTROPY_CHUNK", 3 * 1000)  # 3 positions a chunk, 67 chunks
    chunked = entropy_from_logits(logits, 0.7)
    (grad_chunked,) = torch.autograd.grad(chunked.sum(), logits)
    torch.testing.assert_close(chunked, whole)
    torch.testing.assert_close(grad_chunked, grad_whole)
    with torch.no_grad():
        peak = peak_cpu_memory(lambda: entropy_from_logits(logits))
    assert peak < 0.1 * logits.numel() * 4  # one pass: 3 fp32 copies of the logits
