"""Truncated importance sampling (``labkit.core.tis``, ``GRPOConfig.tis_cap``): the weight is
TRL's, the loss with it is TRL's ``_compute_loss`` with ``importance_sampling_ratio``, it changes
nothing (bitwise) when the sampler agrees with the trainer, and a bf16 run with it on trains."""

from __future__ import annotations

import math
import types

import pytest
import torch
from test_core_trl_parity import (
    B,
    C,
    labkit_logps,
    make_batch,
    make_trainer,
    tiny_model,
    tiny_tokenizer,
)

import labkit as lk
from labkit.algos.grpo import GRPOTrainer
from labkit.core import truncated_is_weight

MODES = ("token_truncate", "token_mask", "sequence_truncate", "sequence_mask")


def trl_is_ratio(old, sampling, mask, mode, clip_max, clip_min=None):
    """TRL 1.16 ``GRPOTrainer._generate_and_score_completions``, trl/trainer/grpo_trainer.py
    lines 2660-2706, copied step by step (it is inline code there, not a function)."""
    diff = torch.nan_to_num((old - sampling) * mask, nan=0.0)
    if mode in ("sequence_mask", "sequence_truncate"):
        diff = diff.sum(dim=-1, keepdim=True)
    ratio = torch.exp(diff)
    if mode in ("sequence_truncate", "token_truncate"):
        return torch.clamp(ratio, min=clip_min, max=clip_max)
    lo = clip_min if clip_min is not None else -math.inf
    hi = clip_max if clip_max is not None else math.inf
    return ratio.masked_fill((ratio < lo) | (ratio > hi), value=0.0)


def batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    old = torch.randn(6, 5, generator=g) - 1  # [B, T]
    sampling = old + 0.6 * torch.randn(6, 5, generator=g)  # far apart: some ratios above C
    mask = (torch.arange(5) < torch.tensor([5, 3, 1, 4, 2, 5])[:, None]).float()
    sampling[1, 0] = float("nan")  # a token the sampler could not score: ratio 1 in both
    return old, sampling, mask


@pytest.mark.parametrize("mode", MODES)
def test_weight_equals_trls_formula(mode):
    old, sampling, mask = batch()
    w, st = truncated_is_weight(old, sampling, mask, 2.0, mode)
    torch.testing.assert_close(w, trl_is_ratio(old, sampling, mask, mode, 2.0), rtol=0, atol=1e-6)
    assert 0 < st["tis/clipped_frac"] < 1  # the batch exercises the cap
    assert not w.requires_grad


@pytest.mark.parametrize(
    "cfg",
    [
        {"loss_type": "grpo", "beta": 0.1},
        {"loss_type": "dapo", "epsilon_high": 0.28},
        {"loss_type": "cispo", "epsilon_high": 5.0},
        {"loss_type": "grpo", "importance_sampling_level": "sequence", "epsilon": 3e-2},
        {"loss_type": "bnpo", "tis_mode": "token_mask"},
        {"loss_type": "dr_grpo", "tis_mode": "sequence_truncate"},
    ],
    ids=str,
)
def test_grpo_loss_with_tis_equals_trl(cfg, tmp_path):
    """GRPOTrainer.loss (the trainer's own method) against TRL's _compute_loss with vLLM's IS
    ratio switched on: same loss and parameter gradients."""
    tiny_model().save_pretrained(tmp_path)
    tiny_tokenizer().save_pretrained(tmp_path)
    mode = cfg.pop("tis_mode", "token_truncate")
    trainer = make_trainer(tmp_path, **cfg)
    trainer.use_vllm, trainer.vllm_importance_sampling_correction = True, True
    model, args = trainer.model, trainer.args
    inputs = make_batch(model)
    mask = inputs["completion_mask"]
    inputs["num_items_in_batch"] = mask.sum()  # labkit's trainer counts its own batch
    g = torch.Generator().manual_seed(3)
    sample = inputs["old_per_token_logps"] + 0.5 * torch.randn(B, C, generator=g)
    inputs["importance_sampling_ratio"] = trl_is_ratio(
        inputs["old_per_token_logps"], sample, mask, mode, 2.0
    )
    params = [p for p in model.parameters() if p.requires_grad]
    trl_loss = trainer._compute_loss(model, inputs)
    trl_grads = torch.autograd.grad(trl_loss, params)

    config = lk.GRPOConfig(**cfg, tis_cap=2.0, tis_mode=mode, num_generations=4)
    me = types.SimpleNamespace(config=config, max_len=args.max_completion_length)
    r = types.SimpleNamespace(
        advantages=inputs["advantages"],
        loss_mask=mask.float(),
        old_logp=inputs["old_per_token_logps"],
        sample_logp=sample,
        ref_logp=inputs["ref_per_token_logps"] if args.beta else None,
    )
    logp = labkit_logps(
        model, inputs["prompt_ids"], inputs["prompt_mask"], inputs["completion_ids"], mask
    )
    loss, stats = GRPOTrainer.loss(me, logp, r)
    grads = torch.autograd.grad(loss, params)
    torch.testing.assert_close(loss, trl_loss, atol=1e-5, rtol=1e-5)
    for ours, theirs in zip(grads, trl_grads):
        torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)
    assert stats["tis/clipped_frac"] > 0  # the cap bites: a weight that is not 1 everywhere


def test_no_effect_when_sampler_equals_trainer():
    """pi_sample == pi_train_old: w = exp(0) = 1 exactly, the loss is bitwise the same."""
    old, _, mask = batch()
    logp = old + 0.1 * torch.randn(old.shape, generator=torch.Generator().manual_seed(1))
    logp.requires_grad_()
    r = types.SimpleNamespace(
        advantages=torch.randn(6),
        loss_mask=mask,
        old_logp=old,
        sample_logp=old.clone(),
        ref_logp=None,
    )
    losses = []
    for cap in (None, 2.0):
        me = types.SimpleNamespace(config=lk.GRPOConfig(tis_cap=cap, num_generations=2), max_len=5)
        losses.append(GRPOTrainer.loss(me, logp, r)[0])
    assert torch.equal(losses[0], losses[1])
    g0, g1 = (torch.autograd.grad(x, logp)[0] for x in losses)
    assert torch.equal(g0, g1)


def test_tis_config_is_checked():
    with pytest.raises(ValueError, match="tis_cap"):
        lk.GRPOConfig(tis_cap=0)
    with pytest.raises(ValueError, match="tis_mode"):
        lk.GRPOConfig(tis_mode="tokens")
    with pytest.raises(ValueError, match="truncated_logprobs"):
        lk.GRPOConfig(tis_cap=2.0, top_k=5)
    with pytest.raises(ValueError, match="dynamic_sampling"):
        lk.GRPOConfig(tis_cap=2.0, dynamic_sampling=True)
    with pytest.raises(ValueError, match="PPOTrainer"):
        lk.PPOConfig(tis_cap=2.0)


@pytest.mark.slow
def test_grpo_in_bf16_with_tis_trains_on_a_fixed_seed(heldout_gain):
    """bf16 autocast with tis_cap=2, the config of test_precision's bf16 run. Measured (seed 0,
    30 steps of 8 x 8, lr 3e-4): held-out 0.420 -> 0.538 with TIS, 0.530 without. The trainer's
    packed forward rounds differently from the sampler's cached decoding in bf16, so the weights
    are not 1: mean within 5.7e-4 of 1, every weight in [0.940, 1.053], none above C."""
    torch.set_num_threads(1)
    tr = lk.GRPOTrainer(
        max_steps=30,
        prompts_per_step=8,
        num_generations=8,
        learning_rate=3e-4,
        seed=0,
        track_kl=False,
        precision="bf16",
        save_steps=0,
        tis_cap=2.0,
    )
    before, after = heldout_gain(tr, 500)
    m = tr.log.metrics
    reward = m["reward/mean"]
    assert after >= before + 0.05 and reward[-5:].mean() > reward[:5].mean()
    assert ((m["tis/weight_mean"] - 1).abs() < 1e-3).all() and (m["tis/clipped_frac"] == 0).all()
    assert m["tis/weight_min"].min() > 0.9 and m["tis/weight_max"].max() < 1.1
    assert (m["tis/logp_gap"] > 0).any()  # the two computations do differ


def test_tis_weights_spread_as_the_samplers_precision_drops():
    """labkit.experiments.precision's mismatch probe on 16 x 4 held-out completions of the cold
    start: max |w - 1| orders fp32 < fp16 < bf16 samplers, with an fp32 trainer and with the
    trainer in the sampler's own precision (cached decoding vs the packed forward)."""
    from labkit.experiments import precision

    torch.set_num_threads(1)
    rows = {
        p: precision.mismatch_summary(p, seed=0, n_prompts=16) for p in ("fp32", "fp16", "bf16")
    }
    for col in ("max |w - 1| (fp32 trainer)", "max |w - 1| (same precision)"):
        w = {p: r[col] for p, r in rows.items()}
        assert w["fp32"] < 1e-4 < w["fp16"] < w["bf16"], (col, w)
