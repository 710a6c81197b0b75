"""Where one GRPO step of benchmarks/grpo_step_vs_trl.py spends its time (one thread).

Phases from cProfile (ms per step, cumulative, profiler overhead included) and the top ops from
torch's profiler (self CPU time). Run: ``python benchmarks/grpo_step_profile.py`` (~20 s).
"""

import cProfile
import pstats

import torch
from torch.profiler import ProfilerActivity, profile

import labkit as lk

PHASES = {
    "rollout (sampling, KV cache)": "rollout",
    "pi_ref forward (no grad)": "reference_logprobs",
    "pi_theta forward + pi_ref forward": "completion_logprobs",
    "backward + AdamW": "optimizer_step",
    "rewards": "score",
    "run log": "log_step",
    "whole step": "train_step",
}


def main(steps: int = 20) -> None:
    torch.set_num_threads(1)
    tr = lk.GRPOTrainer(
        "tiny",
        reward_funcs=["exact_match"],
        max_steps=10 * steps,
        seed=0,
        num_generations=8,
        prompts_per_step=8,
        max_completion_length=4,
        loss_type="dapo",
        beta=0.04,
        learning_rate=3e-4,
        diagnostics=4,
    )
    for _ in range(5):
        tr.step()
    prof = cProfile.Profile()
    prof.runcall(lambda: [tr.step() for _ in range(steps)])
    stats = pstats.Stats(prof).stats  # {(file, line, name): (cc, nc, tt, ct, callers)}
    cum = {}
    for (_, _, name), (_, _, _, ct, _) in stats.items():
        cum[name] = cum.get(name, 0.0) + ct
    print("phase | ms per step (cProfile)")
    for label, fn in PHASES.items():
        print(f"{label} | {1000 * cum.get(fn, 0.0) / steps:.1f}")
    with profile(activities=[ProfilerActivity.CPU]) as p:
        for _ in range(steps // 2):
            tr.step()
    print(p.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))


if __name__ == "__main__":
    main()
