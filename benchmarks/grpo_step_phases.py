"""Wall-clock phases of one GRPO step of benchmarks/grpo_step_vs_trl.py, without a profiler.

cProfile (``grpo_step_profile.py``) inflates every Python call; this wraps the step's phases in
``time.perf_counter`` only: rollout (sampling), pi_ref forward, backward + AdamW, and the whole
step (the rest is the training forward, the loss and the records). Run it a few times: on this
2-vCPU VM a process's two-thread speed of small ops can differ by ~1.4x from the next one's.

    .venv/bin/python benchmarks/grpo_step_phases.py [--threads 2] [--steps 40]
"""

import argparse
import statistics
import time

import torch

import labkit as lk
from labkit.algos import grpo

PHASES = {
    "rollout": "generate",
    "pi_ref forward": "reference_logprobs",
    "backward + AdamW": "optimizer_step",
}


def clocked(fn, label: str, spent: dict):
    """``fn`` that adds its seconds to ``spent[label]``."""

    def timed(*a, **kw):
        t0 = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            spent[label] += time.perf_counter() - t0

    return timed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=torch.get_num_threads())
    ap.add_argument("--steps", type=int, default=40)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    tr = lk.GRPOTrainer(
        "tiny",
        reward_funcs=["exact_match"],
        max_steps=10 + args.steps,
        seed=0,
        num_generations=8,
        prompts_per_step=8,
        max_completion_length=4,
        loss_type="dapo",
        beta=0.04,
        learning_rate=3e-4,
        diagnostics=4,
    )
    spent = dict.fromkeys(PHASES, 0.0)
    for label, name in PHASES.items():
        setattr(tr, name, clocked(getattr(grpo.GRPOTrainer, name).__get__(tr), label, spent))
    for _ in range(10):
        tr.step()
    spent.update(dict.fromkeys(PHASES, 0.0))
    times = []
    for _ in range(args.steps):
        t0 = time.perf_counter()
        tr.step()
        times.append(time.perf_counter() - t0)
    print(f"torch threads {args.threads}: step {1000 * statistics.median(times):.1f} ms (median)")
    for label, s in spent.items():
        print(f"  {label}: {1000 * s / args.steps:.1f} ms (mean)")


if __name__ == "__main__":
    main()
