"""What the reward runtime costs: one call of a cheap reward inline, in a worker process (the
default for a user's function), and with two workers; and a whole GRPO step of the demo size
(16 prompts x 8 generations) with the built-in reward inline against the same reward forced
through a worker (``reward_runtime="process"``). Medians over repeated calls/steps.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/reward_runtime.py [--calls 200 --steps 20]
"""

import argparse
import statistics
import time

import torch

import labkit as lk
from labkit.rewards.runtime import RewardRunner


def per_call_ms(runner: RewardRunner, fn, n: int, B: int = 128) -> float:
    completions, cols = [str(i) for i in range(B)], {"answer": [str(i) for i in range(B)]}
    runner(fn, completions, cols)  # start the worker
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        runner(fn, completions, cols)
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def step_s(runtime: str, steps: int) -> float:
    tr = lk.GRPOTrainer(
        "tiny",
        reward_funcs=["digit_partial"],
        num_generations=8,
        prompts_per_step=16,
        reward_runtime=runtime,
        track_kl=False,
        seed=0,
    )
    tr.step()
    return statistics.median(tr.step()["time/step"] for _ in range(steps))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--steps", type=int, default=20)
    a = p.parse_args()
    torch.set_num_threads(1)
    fn = lk.digit_partial
    rows = [
        ("inline (built-in default)", per_call_ms(RewardRunner(), fn, a.calls)),
        ("worker process", per_call_ms(RewardRunner(mode="process"), fn, a.calls)),
        ("2 worker processes", per_call_ms(RewardRunner(mode="process", workers=2), fn, a.calls)),
    ]
    print("one call of digit_partial on 128 completions, median ms")
    for name, ms in rows:
        print(f"  {name:28s} {ms:8.3f}")
    print(
        f"GRPO step 16x8, median s: inline {step_s('auto', a.steps):.4f}, "
        f"process {step_s('process', a.steps):.4f}"
    )


if __name__ == "__main__":
    main()
