"""Peak memory and time of one forward + backward of the tiny policy, gradient checkpointing
off and on, as the sequence grows (B = 16 sequences of T random tokens).

Memory: the peak of CPU tensor bytes from torch's profiler
(``labkit.models.memory.peak_cpu_memory``). Times are one run each on a shared machine. Run: ``python benchmarks/gradient_checkpointing_memory.py`` (~30 s).
"""

from __future__ import annotations

import copy
import time

B, LENGTHS = 16, (64, 256, 512)


def make(on: bool):
    import labkit as lk
    from labkit.models.policy import enable_gradient_checkpointing

    model, _ = lk.load_policy("tiny")
    model = copy.deepcopy(model).train()
    return enable_gradient_checkpointing(model) if on else model


def step(model, ids):
    model(input_ids=ids).logits.float().logsumexp(-1).mean().backward()  # [B, T, V] -> []


def main() -> None:
    import torch

    from labkit.models.memory import peak_cpu_memory

    torch.set_num_threads(1)
    print(f"B={B}, tiny policy (H=128, 4 layers, V=99), one thread; MiB")
    print("T    | checkpointing | profiler peak | s/step")
    for T in LENGTHS:
        ids = torch.randint(4, 90, (B, T), generator=torch.Generator().manual_seed(0))
        for on in (False, True):
            model = make(on)
            peak = peak_cpu_memory(lambda m=model, x=ids: step(m, x)) / 2**20
            t0 = time.perf_counter()
            step(model, ids)
            dt = time.perf_counter() - t0
            print(f"{T:<4} | {'on' if on else 'off':<13} | {peak:13.1f} | {dt:.3f}")


if __name__ == "__main__":
    main()
