"""``gradient_checkpointing=True`` (HF's, non-reentrant): the same loss and gradients as without
(to 1e-6), for the plain policy and a LoRA one, and a lower peak of CPU tensor memory on a
longer sequence (torch's CPU profiler: ``labkit.models.memory.peak_cpu_memory``)."""

from __future__ import annotations

import copy

import pytest
import torch

import labkit as lk
from labkit.core import policy_loss
from labkit.models.memory import peak_cpu_memory
from labkit.models.policy import add_lora, enable_gradient_checkpointing, is_checkpointing
from labkit.models.rollout import completion_logprobs, rollout


def loss_and_grads(model, r):
    """GRPO's loss on rollout ``r`` in training mode and the gradients of the trainable
    parameters."""
    model.train()
    logp = completion_logprobs(model, r)  # [B, T]
    adv = torch.linspace(-1, 1, len(r), device=logp.device)  # [B]
    loss, _ = policy_loss(logp, logp.detach() - 0.05, adv, r.completion_mask.float())
    params = [p for p in model.parameters() if p.requires_grad]
    return loss, torch.autograd.grad(loss, params)


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
def test_same_loss_and_grads_as_without(lora):
    torch.set_num_threads(1)
    model, tok = lk.load_policy("tiny")
    if lora:
        model = add_lora(model, r=4, alpha=8)
        torch.nn.init.normal_(next(p for n, p in model.named_parameters() if "lora_B" in n))
    prompts = ["12+30=", "7+8=", "55+1=", "3+94=", "60+6=", "9+9=", "41+2=", "1+77="]
    # distinct prompts: one plain forward both ways (repeated prompts would take the prefix-
    # sharing path without checkpointing, equal only to float rounding: tests/test_prefix.py)
    r = rollout(model, tok, prompts, 4, generator=torch.Generator().manual_seed(0))
    plain = loss_and_grads(model, r)
    ckpt = enable_gradient_checkpointing(copy.deepcopy(model))
    assert is_checkpointing(ckpt.train()) and not is_checkpointing(model)
    checked = loss_and_grads(ckpt, r)
    torch.testing.assert_close(checked[0], plain[0], atol=1e-6, rtol=1e-6)
    for a, b in zip(checked[1], plain[1]):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6)
    assert sum(g.abs().sum() for g in checked[1]) > 0  # a real gradient reaches the weights


def test_trainer_switch_gives_the_same_first_step():
    torch.set_num_threads(1)
    kw = {"prompts_per_step": 4, "num_generations": 4, "max_steps": 1, "save_steps": 0}
    a = lk.GRPOTrainer("tiny", **kw)
    b = lk.GRPOTrainer("tiny", gradient_checkpointing=True, **kw)
    assert is_checkpointing(b.model.train()) and not is_checkpointing(a.model.train())
    ma, mb = a.step(), b.step()
    for key in ("loss", "grad_norm", "reward/mean"):
        assert mb[key] == pytest.approx(ma[key], rel=1e-6, abs=1e-7), key


def test_peak_memory_is_lower_on_a_longer_sequence():
    """Measured (16 x 256 tokens, forward + backward of the tiny policy, profiler peak): 185.6
    MiB without, 140.7 MiB with checkpointing; at 16 x 16 tokens: 11.6 vs 11.3 MiB."""
    torch.set_num_threads(1)
    model, _ = lk.load_policy("tiny")
    ids = torch.randint(4, 90, (16, 256), generator=torch.Generator().manual_seed(0))  # [B, T]
    peaks = []
    for on in (False, True):
        m = copy.deepcopy(model).train()
        if on:
            enable_gradient_checkpointing(m)
        peaks.append(
            peak_cpu_memory(
                lambda m=m: m(input_ids=ids).logits.float().logsumexp(-1).mean().backward()
            )
        )
    assert peaks[1] < 0.85 * peaks[0]
