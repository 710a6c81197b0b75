"""Precision by the hardware, run on the CPU: every algorithm steps under bf16 and fp16
autocast (fp16 with a gradient scaler), log-probs stay fp32, and the log-prob error each
precision causes is measured (``labkit.experiments.precision``; whether each precision trains
like fp32 is lab 51's experiment, over seeds)."""

from __future__ import annotations

import pytest
import torch

import labkit as lk
from labkit.experiments.precision import logprob_mismatch
from labkit.models.device import autocast
from labkit.models.rollout import completion_logprobs, rollout

PREFS = [{"prompt": "12+30=", "chosen": "42", "rejected": "43"}] * 2
PAIRS = [("12+30=", "42"), ("21+4=", "25")]
SMALL = {"max_steps": 6, "save_steps": 0}  # fp16: the scaler skips overflowing steps at first
GROUP = {"prompts_per_step": 2, "num_generations": 4, "max_steps": 3, "save_steps": 0}
MAKE = {  # MAKE[algo](precision, **more): more trainer arguments (device=... in test_gpu_algos)
    "grpo": lambda p, **kw: lk.GRPOTrainer("tiny", num_iterations=2, precision=p, **GROUP, **kw),
    "ppo": lambda p, **kw: lk.PPOTrainer("tiny", precision=p, **GROUP, **kw),
    "dpo": lambda p, **kw: lk.DPOTrainer(
        "tiny", pairs=PREFS, batch_size=2, precision=p, **SMALL, **kw
    ),
    "reward_model": lambda p, **kw: lk.RewardModelTrainer(
        "tiny", pairs=PREFS, batch_size=2, precision=p, **SMALL, **kw
    ),
    "sft": lambda p, **kw: lk.SFTTrainer(
        "tiny", pairs=PAIRS, batch_size=2, precision=p, **SMALL, **kw
    ),
}


@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step()`")  # fp16 skips
@pytest.mark.parametrize("precision", ["bf16", "fp16"])
@pytest.mark.parametrize("algo", list(MAKE))
def test_every_algorithm_steps_under_half_precision_autocast(algo, precision):
    torch.set_num_threads(1)
    tr = MAKE[algo](precision)
    assert tr.precision == precision and (tr.scaler is not None) == (precision == "fp16")
    before = [p.detach().clone() for p in tr.params]
    tr.train(progress=False)
    m = tr.log.metrics
    assert torch.isfinite(torch.tensor(m["loss"].tolist())).all()
    after = list(tr.params)
    assert all(torch.isfinite(p).all() for p in after)
    assert any(not torch.equal(a, b) for a, b in zip(after, before))  # it trained


def test_loss_logprobs_are_fp32_under_bf16_autocast():
    model, tok = lk.load_policy("tiny")
    with autocast("cpu", "bf16"):
        r = rollout(model, tok, ["12+30="] * 2, 3, generator=torch.Generator().manual_seed(0))
        logits_dtype = model(r.prompt_ids).logits.dtype
        logp = completion_logprobs(model, r)
    assert logits_dtype == torch.bfloat16 and logp.dtype == torch.float32
    assert r.sample_logp.dtype == torch.float32


def test_low_precision_moves_logprobs_in_mantissa_order():
    """fp32: the cached decode and the full forward agree to rounding; the trainer's log-probs
    move from fp32's by fp16 (~9e-4 measured) < bf16 (~8e-3)."""
    model, tok = lk.load_policy("tiny")
    task = lk.get_task("addition")
    prompts = [e.prompt for e in task.heldout[:16] for _ in range(4)]
    rows = {
        p: logprob_mismatch(model, tok, prompts, p, task.max_answer_chars + 1)
        for p in ("fp32", "fp16", "bf16")
    }
    assert rows["fp32"]["|dlogp|"] < 1e-5 and rows["fp32"]["|dlogp| vs fp32"] == 0
    assert 1e-5 < rows["fp16"]["|dlogp| vs fp32"] < rows["bf16"]["|dlogp| vs fp32"]
