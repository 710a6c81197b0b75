"""The sweep behind the demo's configuration (``labkit.algos.config.DEMO_DEFAULTS``).

Each candidate trains the tiny policy on addition from the shipped cold start (seed fixed) and
is evaluated on the full held-out split (2000 prompts, sampled at T = 1) every --every steps;
evaluation time is not training time. A run stops once it reaches --target or --budget seconds
of training. Prints, per candidate, the seconds (and steps) to the target. Run alone on a quiet
machine: the seconds are the point.

    .venv/bin/python benchmarks/demo_sweep.py [--seed 0] [--budget 90] [--only A,C]
"""

import argparse
import time

import torch

import labkit as lk
from labkit.algos.config import DEMO_DEFAULTS

BASE = {k: v for k, v in DEMO_DEFAULTS.items() if k != "reward_funcs"}
CANDIDATES = {  # name: overrides of the demo's defaults
    "A": {
        "prompts_per_step": 32,
        "num_generations": 4,
        "learning_rate": 5e-4,
        "num_iterations": 2,
        "max_steps": 600,
    },
    "B": {
        "prompts_per_step": 32,
        "num_generations": 4,
        "learning_rate": 5e-4,
        "num_iterations": 1,
        "max_steps": 600,
    },
    "C": {
        "prompts_per_step": 32,
        "num_generations": 4,
        "learning_rate": 1e-3,
        "num_iterations": 1,
        "max_steps": 600,
    },
    "D": {
        "prompts_per_step": 64,
        "num_generations": 4,
        "learning_rate": 1e-3,
        "num_iterations": 1,
        "max_steps": 400,
    },
    "E": {
        "prompts_per_step": 32,
        "num_generations": 4,
        "learning_rate": 7e-4,
        "num_iterations": 2,
        "max_steps": 450,
    },
    "F": {
        "prompts_per_step": 16,
        "num_generations": 8,
        "learning_rate": 5e-4,
        "num_iterations": 2,
        "max_steps": 600,
    },
    "G": {
        "prompts_per_step": 64,
        "num_generations": 2,
        "learning_rate": 5e-4,
        "num_iterations": 2,
        "max_steps": 600,
    },
    "H": {
        "prompts_per_step": 32,
        "num_generations": 4,
        "learning_rate": 1e-3,
        "num_iterations": 2,
        "max_steps": 400,
    },
    "I": {"num_iterations": 2, "max_steps": 600, "adam_beta2": 0.99},
    "J": {"num_iterations": 3, "max_steps": 500},
    "K": {"num_iterations": 2, "max_steps": 600, "max_grad_norm": 2.0},
    "L": {"num_iterations": 2, "max_steps": 600, "lr_scheduler_type": "cosine"},
    "M": {"prompts_per_step": 48, "num_iterations": 2, "max_steps": 450},
    "N": {"num_iterations": 2, "max_steps": 600, "epsilon_high": 0.28},
    "A+skip": {"num_iterations": 2, "max_steps": 600, "skip_zero_advantage": True},
    "M+skip": {
        "prompts_per_step": 48,
        "num_iterations": 2,
        "max_steps": 450,
        "skip_zero_advantage": True,
    },
    "O+skip": {
        "prompts_per_step": 64,
        "num_iterations": 2,
        "max_steps": 350,
        "skip_zero_advantage": True,
    },
    "P+skip": {
        "prompts_per_step": 64,
        "num_iterations": 2,
        "max_steps": 400,
        "skip_zero_advantage": True,
    },
}


def time_to(target: float, overrides: dict, seed: int, every: int, budget: float):
    """(seconds, steps) of training until held-out sampled accuracy >= target, or None; and
    the curve [(step, seconds, accuracy)]."""
    cfg = {**BASE, **overrides, "seed": seed}
    beta2 = cfg.pop("adam_beta2", None)
    tr = lk.GRPOTrainer("tiny", reward_funcs=DEMO_DEFAULTS["reward_funcs"], **cfg)
    if beta2 is not None:  # AdamW's second-moment decay (TRL's adam_beta2)
        for g in tr.optimizer.param_groups:
            g["betas"] = (g["betas"][0], beta2)
    acc = lambda: lk.accuracy(tr.model, tr.tokenizer, tr.task, temperature=1.0, seed=seed + 1)
    curve, spent = [(0, 0.0, acc())], 0.0
    while tr.global_step < cfg["max_steps"] and spent < budget:
        t0 = time.perf_counter()
        tr.train(min(every, cfg["max_steps"] - tr.global_step), progress=False)
        spent += time.perf_counter() - t0
        curve.append((tr.global_step, spent, acc()))
        if curve[-1][2] >= target:
            return (spent, tr.global_step), curve
    return None, curve


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--every", type=int, default=50)
    ap.add_argument("--budget", type=float, default=90.0, help="seconds of training at most")
    ap.add_argument("--target", type=float, default=0.90)
    ap.add_argument("--only", default="", help="comma-separated candidate names")
    args = ap.parse_args()
    names = args.only.split(",") if args.only else list(CANDIDATES)
    print(f"torch threads {torch.get_num_threads()}, seed {args.seed}, target {args.target}")
    for name in names:
        hit, curve = time_to(args.target, CANDIDATES[name], args.seed, args.every, args.budget)
        s, _, a = curve[-1]
        best = max(c[2] for c in curve)
        res = f"{hit[0]:.1f} s (step {hit[1]})" if hit else f"not reached (best {best:.3f})"
        print(
            f"{name} {CANDIDATES[name]}: {res}; last: step {s} acc {a:.3f}; "
            f"s/step {curve[-1][1] / max(1, s):.3f}",
            flush=True,
        )
        print("   curve: " + " ".join(f"{st}:{acc:.3f}" for st, _, acc in curve), flush=True)


if __name__ == "__main__":
    main()
