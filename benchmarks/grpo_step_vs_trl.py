"""Step time of labkit's GRPO loop against TRL's GRPOTrainer on identical work, in one run.

Same tiny policy (the shipped cold-start checkpoint), same seed, 8 prompts x 8 generations,
completion length 4 tokens, loss_type "dapo", beta 0.04 (both keep a frozen reference model),
exact-match reward, lr 3e-4. labkit records all its diagnostics (4 completions of per-token
tensors a step, every sample). Prints the median seconds per step of each, skipping warm-up,
and the ratio labkit / TRL (the target: <= 0.5). labkit runs each distinct prompt once per
forward (``labkit.models.prefix``); the same loop with one plain forward per row is timed too,
so the gain of sharing the prompt is visible apart from the rest.

The two loops take turns, one labkit step after each TRL step (a TRL callback runs it, outside
TRL's clock), so both are timed under the same machine state: on a shared 2-vCPU machine the
speed of small ops at two threads can move by ~1.4x between minutes
(``benchmarks/grpo_step_vs_trl.txt``), which skews a back-to-back order either way.
``--sequential`` times them one after the other instead.

    .venv/bin/python benchmarks/grpo_step_vs_trl.py [--steps 40] [--sequential]
"""

import argparse
import statistics
import tempfile

import torch
from timing import step_times, trl_clock

import labkit as lk
from labkit.models import prefix

P, G, L = 8, 8, 4


def labkit_trainer(steps: int) -> lk.GRPOTrainer:
    return lk.GRPOTrainer(
        "tiny",
        reward_funcs=["exact_match"],
        max_steps=steps,
        seed=0,
        num_generations=G,
        prompts_per_step=P,
        max_completion_length=L,
        loss_type="dapo",
        beta=0.04,
        learning_rate=3e-4,
        diagnostics=4,
    )


def labkit_step_times(steps: int, share_prompts: bool = True) -> list[float]:
    if not share_prompts:  # every batch looks as if its prompts all differed: plain forwards
        prefix.distinct_prompts = lambda ids, mask: None
    try:
        return step_times(labkit_trainer(steps).step, steps)
    finally:
        prefix.distinct_prompts = SHARED


SHARED = prefix.distinct_prompts


def between_steps(step):
    """A ``TrainerCallback`` that calls ``step()`` after each TRL step, timing it in ``.times``."""
    from transformers import TrainerCallback

    class Turns(TrainerCallback):
        def __init__(self):
            self.times = []

        def on_step_end(self, args, state, control, **kw):
            self.times.extend(step_times(step, 1))

    return Turns()


def trl_step_times(steps: int, callbacks=()) -> list[float]:
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    task = lk.get_task("addition")
    data = Dataset.from_dict(
        {"prompt": [e.prompt for e in task.train], "answer": [e.answer for e in task.train]}
    )
    clock = trl_clock()

    with tempfile.TemporaryDirectory() as out:
        args = GRPOConfig(
            output_dir=out,
            bf16=False,
            use_cpu=True,
            report_to=[],
            seed=0,
            activation_checkpointing=False,
            per_device_train_batch_size=P * G,
            num_generations=G,
            max_completion_length=L,
            loss_type="dapo",
            beta=0.04,
            learning_rate=3e-4,
            max_steps=steps,
            logging_steps=10**6,
            save_strategy="no",
            temperature=1.0,
            disable_tqdm=True,
        )
        trainer = GRPOTrainer(
            model=str(lk.models.BUILTIN["tiny"]),
            reward_funcs=lk.exact_match,
            args=args,
            train_dataset=data,
            callbacks=[clock, *callbacks],
            processing_class=lk.load_policy("tiny")[1],
        )
        trainer.train()
    return clock.times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--sequential", action="store_true", help="labkit's steps, then TRL's")
    args = ap.parse_args()
    print(f"torch threads: {torch.get_num_threads()}")
    w = args.warmup
    if args.sequential:
        ours = statistics.median(labkit_step_times(args.steps)[w:])
        theirs = statistics.median(trl_step_times(args.steps)[w:])
    else:
        turns = between_steps(labkit_trainer(args.steps).step)
        theirs = statistics.median(trl_step_times(args.steps, [turns])[w:])
        ours = statistics.median(turns.times[w:])
    plain = statistics.median(labkit_step_times(args.steps, False)[w:])
    order = "one after the other" if args.sequential else "taking turns"
    print(f"labkit GRPO step: {ours * 1000:.1f} ms (median, {P}x{G}, all diagnostics, {order})")
    print(f"labkit GRPO step, one plain forward per row: {plain * 1000:.1f} ms")
    print(f"TRL GRPOTrainer step: {theirs * 1000:.1f} ms (median, same work)")
    print(f"ratio labkit/TRL: {ours / theirs:.2f} (plain forwards: {plain / theirs:.2f})")


if __name__ == "__main__":
    main()
