"""Will this config fit? A rough estimate printed before training, and a clear OOM error.

The estimate counts what dominates an RL step on a causal LM:
weights (+ a frozen reference copy unless LoRA switches its adapter off), gradients and AdamW's
two fp32 moments of the trainable parameters, activations kept for backward
(~34 x H bytes per token per layer in 16-bit, Korthikanti et al. 2022, 2205.05198, eq. 2,
without the attention scores that fused attention never stores) and the logits B x L x V.
It is a guide to within a factor ~2, not a measurement: it says which knob to turn.
"""

from __future__ import annotations

import torch

from labkit.tasks.base import max_completion_tokens

GB = 1024**3


def available_memory(device) -> float:
    """Free bytes on ``device``: the GPU's free memory, or the host's available RAM."""
    device = torch.device(device)
    if device.type == "cuda":
        return float(torch.cuda.mem_get_info(device)[0])
    import psutil

    return float(psutil.virtual_memory().available)


def step_shape(config, task=None) -> tuple[int, int]:
    """(B sequences per forward, L tokens per sequence) of a trainer's step."""
    if hasattr(config, "num_generations") and hasattr(config, "prompts_per_step"):
        B = config.prompts_per_step * config.num_generations
        T = (
            max_completion_tokens(task, config.max_completion_length)
            if task is not None
            else config.max_completion_length or 64
        )
        return B, T + 64  # + a prompt of up to ~64 tokens
    return 2 * getattr(config, "batch_size", 1), 128  # pairs: chosen and rejected


def estimate_memory(
    model,
    B: int,
    L: int,
    precision: str = "fp32",
    reference: bool = True,
    gradient_checkpointing: bool = False,
) -> dict:
    """Bytes a step needs, by part: ``{"weights", "reference", "optimizer", "activations",
    "logits", "total"}``; B sequences of L tokens."""
    params = list(model.parameters())
    n_all = sum(p.numel() for p in params)
    n_train = sum(p.numel() for p in params if p.requires_grad)
    w_bytes = sum(p.numel() * p.element_size() for p in params)
    act = 2 if precision in ("bf16", "fp16") else 4  # bytes per activation element
    cfg = model.config
    H, layers, V = cfg.hidden_size, cfg.num_hidden_layers, cfg.vocab_size
    per_token = 34 * H * layers * act / 2  # 34 x H bytes per layer at 16 bits
    if gradient_checkpointing:
        per_token = H * layers * act + 34 * H * act / 2  # layer inputs + one layer's worth
    parts = {
        "weights": w_bytes,
        "reference": w_bytes * n_train / max(n_all, 1) if reference else 0,
        "optimizer": n_train * (4 + 8),  # fp32 grads + AdamW's m and v
        "activations": B * L * per_token,
        "logits": B * L * V * (act + 4),
    }  # model output + one fp32 chunk at a time
    parts["total"] = sum(parts.values())
    return parts


def memory_report(trainer) -> str:
    """ "this config needs ~X GB; you have Y GB; try ..." for a trainer's model and config."""
    B, L = step_shape(trainer.config, trainer.task)
    ref = getattr(trainer, "ref_model", None) is not None
    need = estimate_memory(
        trainer.model,
        B,
        L,
        trainer.precision,
        ref,
        getattr(trainer.config, "gradient_checkpointing", False),
    )
    have = available_memory(trainer.device)
    msg = (
        f"this config needs ~{need['total'] / GB:.2f} GB on {trainer.device} "
        f"(B={B} sequences x L={L} tokens, {trainer.precision}); you have "
        f"{have / GB:.2f} GB free"
    )
    if need["total"] > 0.9 * have:
        msg += (
            "; try: fewer prompts_per_step or num_generations, a shorter "
            "max_completion_length, LoRA (lk.add_lora: no reference copy, no full optimizer "
            "state), precision='bf16' on a GPU, gradient_checkpointing=True"
        )
    return msg


def out_of_memory_error(trainer) -> MemoryError:
    """The error raised instead of an allocator trace when a step runs out of memory."""
    return MemoryError("out of memory during a training step: " + memory_report(trainer))


def peak_cpu_memory(fn) -> float:
    """Peak bytes of CPU tensors allocated while ``fn()`` runs, from torch's CPU profiler
    (``profile_memory=True``): each op's own allocations and each ``[memory]`` free, in time
    order, summed; the running maximum. Tensors alive before the call are not counted. A
    measure for comparing two ways of doing the same work (e.g. gradient checkpointing on and
    off), not the process's RSS.

    >>> peak_cpu_memory(lambda: torch.ones(1024, 1024).sum()) >= 4 * 1024 ** 2
    True
    """
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    deltas = sorted(
        (
            e.time_range.start,
            e.cpu_memory_usage if e.name == "[memory]" else e.self_cpu_memory_usage,
        )
        for e in prof.events()
        if e.cpu_memory_usage
    )
    now = peak = 0
    for _, d in deltas:
        now += d
        peak = max(peak, now)
    return float(peak)
