"""``python -m labkit demo``: the main job, headless.

Evaluates the tiny policy on held-out prompts, trains it with GRPO (progress bar), evaluates
again, writes ``runs/demo/report.html`` and prints, as its last line,
``accuracy: <before> -> <after> (held-out, sampled)``.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys
import time

from labkit.algos.config import DEMO_DEFAULTS


def demo(args) -> int:
    from labkit.algos.grpo import GRPOTrainer
    from labkit.plots.report import report
    from labkit.runs.evaluate import accuracy

    out = pathlib.Path(args.out)
    os.environ["LABKIT_RUNS"] = str(out.parent)  # the trainer logs to <out>
    trainer = GRPOTrainer(
        args.model,
        reward_funcs=args.reward,
        task=args.task,
        run_name=out.name,
        max_steps=args.steps,
        seed=args.seed,
        learning_rate=args.lr,
        num_iterations=args.num_iterations,
        num_generations=args.num_generations,
        prompts_per_step=args.prompts_per_step,
        beta=args.beta,
        skip_zero_advantage=not args.every_row,
    )  # the demo's default
    m, tok, task = trainer.model, trainer.tokenizer, trainer.task

    def evaluate():
        return (
            accuracy(m, tok, task, temperature=1.0, seed=args.seed + 1),
            accuracy(m, tok, task, temperature=0),
        )

    before = evaluate()
    print(
        f"before: held-out accuracy sampled {before[0]:.3f}, greedy {before[1]:.3f} "
        f"({len(task.heldout)} prompts)",
        flush=True,
    )
    t0 = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - t0
    after = evaluate()
    print(
        f"after {trainer.global_step} steps ({seconds:.0f} s): held-out accuracy sampled "
        f"{after[0]:.3f}, greedy {after[1]:.3f}"
    )
    summary = {
        "model": args.model,
        "task": task.name,
        "steps": trainer.global_step,
        "seed": args.seed,
        "train seconds": f"{seconds:.1f}",
        "held-out sampled accuracy": f"{before[0]:.3f} -> {after[0]:.3f}",
        "held-out greedy accuracy": f"{before[1]:.3f} -> {after[1]:.3f}",
    }
    path = report(trainer.log, out / "report.html", summary)
    trainer.log.close()
    print(f"run log: {out}/ (metrics.jsonl, samples.jsonl, tokens.jsonl); report: {path}")
    print(f"accuracy: {before[0]:.2f} -> {after[0]:.2f} (held-out, sampled)")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m labkit", description="labkit command line")
    sub = ap.add_subparsers(dest="command", required=True)
    d = sub.add_parser("demo", help="GRPO on the tiny policy: before/after held-out accuracy")
    D = DEMO_DEFAULTS
    d.add_argument("--steps", type=int, default=D["max_steps"], help="GRPO steps")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--out", default="runs/demo", help="run folder (default runs/demo)")
    d.add_argument("--model", default="tiny")
    d.add_argument("--task", default="addition")
    d.add_argument("--reward", nargs="+", default=D["reward_funcs"], help="built-in rewards")
    d.add_argument("--lr", type=float, default=D["learning_rate"])
    d.add_argument(
        "--num-iterations",
        type=int,
        default=D["num_iterations"],
        help="mu, policy updates per sampled batch",
    )
    d.add_argument("--num-generations", type=int, default=D["num_generations"])
    d.add_argument("--prompts-per-step", type=int, default=D["prompts_per_step"])
    d.add_argument("--beta", type=float, default=D["beta"])
    d.add_argument(
        "--every-row",
        action="store_true",
        help="train on every completion, also "
        "those with advantage 0 (same gradient, slower; skip_zero_advantage=False)",
    )
    from labkit.integrations.export import add_parser as add_export_parser

    add_export_parser(sub)
    args = ap.parse_args(argv)
    try:
        return getattr(args, "func", demo)(args)
    except ValueError as e:  # bad input: one readable line, not a traceback
        print(f"error: {e}", file=sys.stderr)
        return 2
