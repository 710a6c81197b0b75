"""What a GPU step costs: host syncs per step on CUDA (counted twice: the Python-level reads of
tests/test_host_syncs.py, and CUDA's own sync debug mode, which also sees the syncs inside C++
ops), and labkit's memory estimate against ``torch.cuda.max_memory_allocated`` for SmolLM2-135M
(random weights, its published architecture) + LoRA at two batch sizes.

Skipped without CUDA (the ``gpu`` marker, tests/conftest.py).
"""

from __future__ import annotations

import gc
import math
import warnings

import pytest
import torch
from test_host_syncs import count_syncs

import labkit as lk
import labkit.models.rollout as rollout_module
from labkit.experiments import gpu
from labkit.models.memory import GB, estimate_memory, step_shape

pytestmark = pytest.mark.gpu
SHAPES = {"small": (2, 4), "wide": (16, 4), "long": (2, 32)}  # (prompts, completion tokens)


def debug_syncs(trainer) -> int:
    """Syncs of one ``trainer.step()`` (after a warm-up step) that CUDA's sync debug mode
    reports: each one a warning."""
    trainer.step()
    torch.cuda.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            trainer.step()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    return sum("synchroniz" in str(w.message) for w in caught)


@pytest.mark.parametrize("algo", ["grpo", "ppo"])
def test_host_syncs_per_step_on_cuda_do_not_grow_with_batch_or_length(
    algo, gpu_device, cuda_only, monkeypatch, record_property
):
    if gpu_device.type != "cuda":  # a rehearsal: the CPU asks "all ended?" at every token
        rule = rollout_module.stop_check
        monkeypatch.setattr(
            rollout_module, "stop_check", lambda d, t: rule(torch.device("cuda"), t)
        )
    cls = {"grpo": lk.GRPOTrainer, "ppo": lk.PPOTrainer}[algo]

    def make(prompts, T):
        return cls(
            "tiny",
            device=gpu_device,
            prompts_per_step=prompts,
            num_generations=4,
            max_completion_length=T,
            num_iterations=2,
            max_steps=4,
            save_steps=0,
            diagnostics=4,
            seed=0,
        )

    py = {k: count_syncs(make(*shape)) for k, shape in SHAPES.items()}
    record_property("python_reads", py)
    assert py["wide"] == py["small"] and py["small"] <= py["long"] <= py["small"] + math.log2(32)
    cuda_only("torch.cuda.set_sync_debug_mode")
    seen = {k: debug_syncs(make(*shape)) for k, shape in SHAPES.items()}
    record_property("sync_debug_mode", seen)
    assert seen["small"] > 0  # the witness is on: .tolist() of the rewards alone is one
    assert seen["wide"] <= seen["small"] + 2  # a sync per row would add 28 or more here
    assert seen["long"] <= seen["small"] + math.log2(32) + 2


SIZES = {  # SmolLM2-135M on a GPU; a rehearsal on the CPU runs one layer, few tokens
    "cuda": {"layers": 30, "T": 128, "prompts": (4, 16)},
    "cpu": {"layers": 1, "T": 4, "prompts": (1, 2)},
}


def smollm2_lora_step(device, layers: int, T: int, prompts: int):
    """One GRPO step of random-weight SmolLM2-135M + LoRA r=16 (G = 8, T tokens, bf16 on a
    GPU >= sm80): ``(trainer, rollout shape (B, P + T))``."""
    torch.manual_seed(0)
    model, tok = gpu.random_policy("smollm2-135m", device=device, num_hidden_layers=layers)
    tr = lk.GRPOTrainer(
        lk.models.add_lora(model),
        tokenizer=tok,
        task="addition",
        reward_funcs=["digit_partial"],
        prompts_per_step=prompts,
        num_generations=8,
        max_completion_length=T,
        beta=0.0,
        max_steps=1,
        save_steps=0,
        seed=0,
    )
    shapes = []
    generate = tr.generate

    def spy(*args, **kwargs):
        shapes.append(generate(*args, **kwargs))
        return shapes[-1]

    tr.generate = spy
    tr.step()
    r = shapes[-1]
    return tr, (len(r), r.prompt_ids.shape[1] + r.completion_ids.shape[1])


def test_memory_estimate_is_within_2x_of_the_peak_for_smollm2_lora(
    gpu_device, cuda_only, record_property
):
    """The estimate (labkit.models.memory: "good to about 2x") of one step, at the step's real
    shape and at the shape the printed report assumes (a 64-token prompt), against the peak
    of CUDA memory allocated during the step, the weights included; two batch sizes."""
    size = SIZES[gpu_device.type]
    rows = []
    for prompts in size["prompts"]:
        gc.collect()
        if gpu_device.type == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated() if gpu_device.type == "cuda" else 0
        tr, (B, L) = smollm2_lora_step(gpu_device, size["layers"], size["T"], prompts)
        est = estimate_memory(tr.model, B, L, tr.precision, reference=False)["total"]
        printed = estimate_memory(tr.model, *step_shape(tr.config, tr.task), tr.precision, False)
        peak = torch.cuda.max_memory_allocated() - base if gpu_device.type == "cuda" else 0
        rows.append({"B": B, "L": L, "precision": tr.precision, "peak_gb": peak / GB})
        rows[-1].update(est_gb=est / GB, printed_est_gb=printed["total"] / GB)
        del tr
    record_property("rows", rows)
    cuda_only("torch.cuda.max_memory_allocated")
    small, large = rows
    assert large["peak_gb"] > small["peak_gb"]
    for row in rows:
        assert 0.5 <= row["peak_gb"] / row["est_gb"] <= 2.0, row
