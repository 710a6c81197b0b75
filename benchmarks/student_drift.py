"""Why does lab 93's starved RL student drift to the length limit? A pilot, not a stored result.

    OMP_NUM_THREADS=1 python benchmarks/student_drift.py [--seeds 0 2] [--workers 2]

``distill_graded``'s ``student RL`` arm (GRPO from the 2-layer student's direct-answer base on
graded's two-digit cells, at the distillation's compute) almost never samples a right answer,
yet on some seeds its answers grow to the length limit (lab 93's discussion). Two suspects:

- GRPO's 1/|o| (``loss_type="grpo"``): a long wrong answer's penalty is spread over more
  tokens (Dr. GRPO, lab 76). Variant ``dr_grpo``: the same run with Dr. GRPO's loss.
- AdamW on a sparse signal: with beta = 0, a batch in which no sample earns a reward has zero
  advantages and a zero gradient, but the trainer (as TRL's) still steps the optimizer, and
  Adam's momentum moves the policy on; the rare gradients also leave the second moment small.
  Variant ``skip``: the optimizer step skipped when the gradient norm is 0 (momentum cannot
  move the policy between signals; the signal steps themselves are unchanged). The same
  flag exists elsewhere: rasbt/reasoning-from-scratch's GRPO scripts,
  ``--skip-zero-advantage-updates`` (PR #186, whose description notes that AdamW's momentum
  moves the weights on a batch without signal); labkit's ``skip_zero_advantage`` skips such
  rows' forward and backward, not the optimizer step.

Each variant runs the arm's own ``train`` (base pretraining, probes) on the same seeds, beside
``grpo``, the arm as stored. Printed per run: steps (the compute budget stops a run sooner when
its answers are long), the longest 20-step mean of ``len/mean`` (characters), the mean of the
last 50 steps, the share of steps with any right answer, the skipped steps and the student's
held-out accuracy at the end. Two seeds decide nothing; this says where to look.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import multiprocessing
import os
import tempfile

VARIANTS = ("grpo", "dr_grpo", "skip")


def run(variant: str, seed: int, root: str) -> dict:
    """One run of ``student RL`` under ``variant`` (in a fresh process: it patches modules)."""
    os.environ["LABKIT_RUNS"] = root
    import torch

    from labkit.algos import base
    from labkit.experiments import distill_graded as dg

    torch.set_num_threads(1)
    skipped = [0]
    if variant == "dr_grpo":
        dg.RL = dg.RL | {"loss_type": "dr_grpo"}
    if variant == "skip":

        def optimizer_step(self, loss):
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            limit = self.config.max_grad_norm if self.config.max_grad_norm > 0 else float("inf")
            grad_norm = torch.nn.utils.clip_grad_norm_(self.params, limit)
            if grad_norm > 0:
                self.optimizer.step()
            else:
                skipped[0] += 1
            return grad_norm

        base.Trainer.optimizer_step = optimizer_step
    arm = dg.STUDENT_RL
    out = dg.train(
        arm, dg.ARMS[arm], seed=seed, steps=dg.EXPERIMENT.steps, fast=False,
        run_name=f"student_drift/{variant}/seed-{seed}", tick=lambda *a, **k: None,
    )  # fmt: skip
    m, s = out.curves, out.summary
    return {
        "variant": variant,
        "seed": seed,
        "steps": len(m),
        "max len (20-step mean)": m["len/mean"].rolling(20).mean().max(),
        "len, last 50": m["len/mean"].iloc[-50:].mean(),
        "steps with signal": (m["accuracy"] > 0).mean(),
        "skipped": skipped[0],
        "accuracy at the end": s["student accuracy"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 2])
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    import pandas as pd

    root = tempfile.mkdtemp(prefix="student_drift-")
    jobs = [(v, s) for s in args.seeds for v in VARIANTS]
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(args.workers, mp_context=ctx, max_tasks_per_child=1) as pool:
        rows = list(pool.map(run, *zip(*jobs), [root] * len(jobs)))
    table = pd.DataFrame(rows).sort_values(["seed", "variant"])
    print(table.to_string(index=False, float_format=lambda x: f"{x:.3g}"))


if __name__ == "__main__":
    main()
