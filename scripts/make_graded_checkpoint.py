"""Build ``tiny-graded``: the cold start of the ``graded`` task (``labkit/tasks/graded.py``: 2-5
one-digit or 2-3 two-digit numbers to add, six cells in equal shares), by SFT of ``tiny-think``
(the ``tiny`` architecture; ``--base tiny-random`` starts from scratch instead).

Each train example's target is drawn once: a direct answer (``<answer>112</answer>``) with
probability 1 - ``--think``; else a thought of running sums, which with probability
``--recheck`` re-checks one or two of its steps (``3+5=8 3+5=8 8+8=16``: redundant, harmless).
The same mixture in every cell: whether to think, and how long, is left for RL to learn.

The card (``labkit_card.json``) records the command, the SFT's steps and wall time, the file
size, and per cell: sampled accuracy (T = 1) free, forced to think (prompt + ``<think>``) and
forced to answer (prompt + ``<answer>``), and, free, the think rate, the thought length, the
re-check rate and the spread of pass rates over prompts (``--G`` samples of each probe prompt).

Why this recipe (what was tried first): from scratch, a 400-step trial left every cell's sampled
accuracy under 0.35, so the later trials started from ``tiny-think``, which already writes the
format and one-digit chains; with whole two-digit steps (``12+34=46``), 1200 steps left thinking
no better than a direct answer on ``2x2`` and ``3x2``; with one-digit operands only (2 to 7 of
them), a direct answer was as good as thinking on the hardest cell. Place-value steps are
one-digit column additions, which the policy learns.

    OMP_NUM_THREADS=1 python scripts/make_graded_checkpoint.py

``tiny-graded-recheck`` (lab 92's second set-up, ``labkit.experiments.kimi_recheck``) is the same
script continued from ``tiny-graded`` with re-checks the dominant mode of a thought:

    OMP_NUM_THREADS=1 python scripts/make_graded_checkpoint.py --base tiny-graded --steps 400 \
        --recheck 0.85 --out labkit/checkpoints/tiny-graded-recheck

Why: accuracy RL from ``tiny-graded`` (a third of its thoughts re-checked) removed the re-checks
(``kimi_length``'s acc arm), so a length reward had nothing redundant to cut. The recipe was fixed
before any RL run, from what the card had to show: re-checks in most thoughts on most cells (at a
target of 1/3, ``tiny-graded``'s card measured fewer than the target, fewest on the two-digit
cells, where only a re-check of a correct step counts, hence 0.85 rather than ~0.7), and pass and
think rates per cell near ``tiny-graded``'s (the same think share, a short continued SFT as
``make_fused_checkpoint.py``'s 400 steps). The card's ``accuracy_rechecked`` and
``accuracy_plain`` show whether a re-check is harmless to the policy that writes it.
"""

import argparse
import json
import pathlib
import random
import sys
import time
from collections import defaultdict

import torch

import labkit as lk
from labkit.algos.base import StepRecord
from labkit.algos.sft import SFTTrainer
from labkit.core.logprobs import masked_sum
from labkit.models.policy import BUILTIN, load_policy
from labkit.models.rollout import completion_logprobs, rollout, tokenize_pairs
from labkit.tasks.arithmetic import parse_int
from labkit.tasks.base import max_completion_tokens
from labkit.tasks.graded import (
    CELLS,
    MAX_RECHECKS,
    Graded,
    bucket,
    bucket_report,
    graded_steps,
    graded_target,
)
from labkit.tasks.scratchpad import parse


class SortedChunksSFT(SFTTrainer):
    """SFT whose batch, drawn as :class:`SFTTrainer` draws it, runs in ``chunks`` forwards of
    pairs of similar length: the loss (token-weighted, one backward) and so the step are the
    whole batch's, but each forward pads to its own chunk's longest pair, not the batch's.

    Departure tried and dropped: drawing each batch from one length group (HF's
    ``group_by_length``) made batches of one kind (direct answers, or one cell's thoughts);
    after 400 steps its loss was twice uniform batches' and the thoughts ignored the prompt."""

    def __init__(self, *args, chunks: int = 4, **kwargs):
        super().__init__(*args, **kwargs)
        self.chunks = chunks

    def train_step(self) -> StepRecord:
        pairs = sorted(self.draw_pairs(), key=lambda p: len(p[0]) + len(p[1]))
        n = -(-len(pairs) // self.chunks)
        self.model.train()
        logp, tokens = 0.0, 0
        for i in range(0, len(pairs), n):
            batch = tokenize_pairs(self.tokenizer, pairs[i : i + n], self.device)
            logp = logp + masked_sum(completion_logprobs(self.model, batch), batch.completion_mask)
            tokens += int(batch.completion_mask.sum())
        loss = -logp / tokens
        grad_norm = self.optimizer_step(loss)
        return StepRecord({"loss": loss.item(), "grad_norm": float(grad_norm)})


MODES = {"free": "", "forced_think": "<think>", "forced_direct": "<answer>"}
RECHECK_KEYS = ("rechecks_per_thought", "accuracy_rechecked", "accuracy_plain")


def cold_start_pairs(task: Graded, think: float, recheck: float, seed: int):
    """(prompt, target) for every train example, drawn as the module docstring says."""
    rng = random.Random(seed)
    pairs = []
    for e in task.train:
        ops, d = task.operands(e.prompt), e.columns["digits"]
        thinks, rechecks, n_steps = rng.random() < think, [], (len(ops) - 1) * d
        if thinks and rng.random() < recheck:
            rechecks = rng.sample(range(n_steps), rng.randint(1, min(MAX_RECHECKS, n_steps)))
        pairs.append((e.prompt, graded_target(ops, d, thinks, rechecks)))
    return pairs


def probe_examples(task: Graded, per_cell: int) -> list:
    """The first ``per_cell`` held-out examples of each cell, easiest cell first."""
    by = {bucket(k, d): [] for k, d in CELLS}
    for e in task.heldout:
        by[e.columns["bucket"]].append(e)
    return [e for b in by.values() for e in b[:per_cell]]


def sample_texts(model, tok, prompts, max_len, seed, chunk=512) -> list[str]:
    gen = torch.Generator().manual_seed(seed)
    out = []
    for i in range(0, len(prompts), chunk):
        r = rollout(model, tok, prompts[i : i + chunk], max_len, temperature=1.0, generator=gen)
        out += r.completions
    return out


def recheck_report(examples: list, completions: list[str]) -> dict[str, dict]:
    """Per cell, over the well-formed thoughts: ``rechecks_per_thought`` (mean re-checks) and
    the accuracy of thoughts with a re-check (``accuracy_rechecked``) and without one
    (``accuracy_plain``); None where a cell has no such thought. Whether re-checks are harmless.

    >>> ex = [Graded.example([3, 5], 1)] * 3
    >>> r = recheck_report(ex, ["<think>3+5=8 3+5=8</think><answer>8</answer>",
    ...                         "<think>3+5=8</think><answer>9</answer>", "<answer>8</answer>"])
    >>> r["2x1"]["rechecks_per_thought"], r["2x1"]["accuracy_rechecked"], r["2x1"]["accuracy_plain"]
    (0.5, 1.0, 0.0)
    """
    rows = defaultdict(list)
    for e, c in zip(examples, completions, strict=True):
        p = parse(c)
        if p.well_formed and p.think is not None:
            ops, d = Graded.operands(e.prompt), e.columns["digits"]
            n = sum(s.redundant for s in graded_steps(c, ops, d))
            rows[e.columns["bucket"]].append((n, parse_int(p.answer) == int(e.answer)))
    mean = lambda xs: sum(xs) / len(xs) if xs else None
    return {
        b: {
            "rechecks_per_thought": mean([n for n, _ in r]),
            "accuracy_rechecked": mean([ok for n, ok in r if n]),
            "accuracy_plain": mean([ok for n, ok in r if not n]),
        }
        for b, r in rows.items()
    }


def probe(model, tok, task, per_cell: int, G: int, seed: int) -> dict:
    """Per cell: each mode's sampled accuracy, the free mode's whole bucket report and its
    :func:`recheck_report`."""
    ex = [e for e in probe_examples(task, per_cell) for _ in range(G)]
    max_len = max_completion_tokens(task)
    reports, free_texts = {}, []
    for mode, prefix in MODES.items():
        texts = sample_texts(model, tok, [e.prompt + prefix for e in ex], max_len, seed)
        reports[mode] = bucket_report(ex, [prefix + t for t in texts])
        free_texts = free_texts or texts  # "free" comes first
    rechecks = recheck_report(ex, free_texts)
    cells = {}
    for b, free in reports["free"].items():
        acc = {f"accuracy_{m}": reports[m][b]["pass_rate"] for m in MODES}
        cells[b] = {**acc, **{k: v for k, v in free.items() if k != "pass_rate"}}
        cells[b] |= rechecks.get(b, dict.fromkeys(RECHECK_KEYS))
    return cells


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=1200)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--learning-rate", type=float, default=1e-3)
    ap.add_argument("--base", default="tiny-think", help="policy to start from (tiny-random: none)")
    ap.add_argument("--chunks", type=int, default=4, help="forwards per batch, by length")
    ap.add_argument("--think", type=float, default=0.5, help="share of targets that think")
    ap.add_argument("--recheck", type=float, default=1 / 3, help="share of thoughts re-checked")
    ap.add_argument("--per-cell", type=int, default=32, help="held-out probe prompts per cell")
    ap.add_argument("--G", type=int, default=8, help="samples of each probe prompt per mode")
    ap.add_argument("--out", default=str(BUILTIN["tiny-graded"]))
    args = ap.parse_args()

    torch.set_num_threads(1)
    lk.set_seed(args.seed)
    task = Graded()
    model, tok = load_policy(args.base)
    pairs = cold_start_pairs(task, args.think, args.recheck, args.seed)
    t0 = time.perf_counter()
    trainer = SortedChunksSFT(
        model,
        pairs,
        tokenizer=tok,
        max_steps=args.steps,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        seed=args.seed,
        chunks=args.chunks,
    )
    trainer.train(progress=False)
    sft_seconds = time.perf_counter() - t0
    model.eval()
    cells = probe(model, tok, task, args.per_cell, args.G, seed=args.seed + 1)
    # positions reach prompt + 97 completion tokens, past tiny's 64; RoPE has no table, so
    # this only keeps the config honest (outputs unchanged)
    model.config.max_position_embeddings = 128
    model.save_pretrained(args.out)
    tok.save_pretrained(args.out)
    out = pathlib.Path(args.out)
    card = {
        "task": "graded",
        "base": args.base,
        "command": " ".join(["python scripts/make_graded_checkpoint.py", *sys.argv[1:]]),
        "seed": args.seed,
        "steps": args.steps,
        "batch_size": args.batch_size,
        "learning_rate": args.learning_rate,
        "chunks": args.chunks,
        "targets": {"think": args.think, "recheck": args.recheck, "max_rechecks": MAX_RECHECKS},
        "sft_seconds": round(sft_seconds, 1),
        "threads": torch.get_num_threads(),
        "probe": (
            f"held-out, the first {args.per_cell} prompts of each cell x {args.G} samples, "
            f"temperature 1, {max_completion_tokens(task)} tokens"
        ),
        "size_bytes": sum(f.stat().st_size for f in out.iterdir() if f.name != "labkit_card.json"),
        "cells": cells,
    }
    (out / "labkit_card.json").write_text(json.dumps(card, indent=1) + "\n")
    print(json.dumps(card, indent=1))


if __name__ == "__main__":
    main()
