"""Time-to-accuracy of the demo: held-out sampled accuracy against seconds of GRPO training.

Runs the demo's configuration (the defaults of `python -m labkit demo`) and evaluates on the
full held-out split every --every steps; evaluation time is not counted as training time.
Target: >= 0.90 held-out sampled accuracy within 60 s of training on 2 cores.

    .venv/bin/python benchmarks/time_to_accuracy.py [--steps 300] [--every 25]
"""

import argparse
import time

import torch

import labkit as lk
from labkit.cli import DEMO_DEFAULTS


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=DEMO_DEFAULTS["max_steps"])
    ap.add_argument("--every", type=int, default=25)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--csv", default=None, help="also write the curve to this CSV file")
    args = ap.parse_args()
    cfg = {**DEMO_DEFAULTS, "max_steps": args.steps, "seed": args.seed}
    tr = lk.GRPOTrainer("tiny", reward_funcs=cfg.pop("reward_funcs"), **cfg)
    acc = lk.accuracy(tr.model, tr.tokenizer, tr.task, temperature=1.0, seed=args.seed + 1)
    rows, train_s = [(0, 0.0, acc)], 0.0
    print(f"torch threads {torch.get_num_threads()}\nstep  train_s  heldout_sampled")
    print(f"{0:4d} {0.0:8.1f} {acc:8.3f}", flush=True)
    while tr.global_step < args.steps:
        t0 = time.perf_counter()
        tr.train(min(args.every, args.steps - tr.global_step), progress=False)
        train_s += time.perf_counter() - t0
        acc = lk.accuracy(tr.model, tr.tokenizer, tr.task, temperature=1.0, seed=args.seed + 1)
        rows.append((tr.global_step, train_s, acc))
        print(f"{tr.global_step:4d} {train_s:8.1f} {acc:8.3f}", flush=True)
    hit = next((r for r in rows if r[2] >= 0.90), None)
    print(
        "time to 0.90 held-out sampled accuracy: "
        + (f"{hit[1]:.1f} s (step {hit[0]})" if hit else "not reached")
    )
    if args.csv:
        with open(args.csv, "w") as f:
            f.write("step,train_seconds,heldout_sampled_accuracy\n")
            f.writelines(f"{s},{t:.2f},{a:.4f}\n" for s, t, a in rows)


if __name__ == "__main__":
    main()
