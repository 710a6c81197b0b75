"""Peak host memory of log pi(y_t) over a 150k vocabulary: plain, TRL's, labkit's chunked.

Each variant runs forward + backward in a fresh process on logits [B, T, V] (fp32 or bf16,
created in place) and reports the rise of the process's peak RSS (ru_maxrss) above what it
held once the logits existed (glibc's mmap threshold fixed, so freed buffers leave). Run: ``python benchmarks/logsoftmax_memory.py`` (~1 min, CPU).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys

B, T, V = 2, 256, 151_936  # Qwen2.5's vocabulary


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def one(variant: str, dtype: str) -> None:
    import torch

    torch.set_num_threads(1)
    logits = torch.empty(B, T, V, dtype=getattr(torch, dtype)).normal_()
    logits.requires_grad_(True)
    ids = torch.randint(0, V, (B, T))
    base = peak_mb()
    if variant == "plain":  # log_softmax in fp32, then gather: a [B, T, V] fp32 tensor kept
        lp = logits.float().log_softmax(-1).gather(-1, ids[..., None]).squeeze(-1)
    elif variant == "trl":
        from trl.trainer.utils import selective_log_softmax

        lp = selective_log_softmax(logits, ids)
    else:
        from labkit.core.logprobs import token_logprobs

        lp = token_logprobs(logits, ids)
    lp.float().sum().backward()
    print(
        f"{variant:8s} {dtype:9s} logits {logits.numel() * logits.element_size() / 2**20:7.0f} "
        f"MB  peak rise {peak_mb() - base:7.0f} MB  (grad of the logits included)"
    )


if __name__ == "__main__":
    if len(sys.argv) == 3:
        one(sys.argv[1], sys.argv[2])
    else:
        print(f"B={B} T={T} V={V}: forward + backward")
        for dtype in ("float32", "bfloat16"):
            for variant in ("plain", "trl", "labkit"):
                # a fixed mmap threshold: every large buffer is returned to the OS when freed,
                # so the peak RSS is the peak of live tensors, not glibc's heap high-water mark
                env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536"}
                subprocess.run([sys.executable, __file__, variant, dtype], check=True, env=env)
