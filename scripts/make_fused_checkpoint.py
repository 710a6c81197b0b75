"""Build ``tiny-fused``: Qwen3's Thinking Mode Fusion at toy scale on the ``graded`` task, by
continued SFT of ``tiny-graded`` (the thinking cold start; ``scripts/make_graded_checkpoint.py``).

Qwen3 (arXiv 2505.09388, sec. 4.3) fuses the modes by continued SFT of its reasoning model on
thinking and non-thinking data marked by a ``/think`` or ``/no_think`` flag in the user's turn,
a non-thinking answer keeping an empty ``<think></think>`` block. Here each train prompt of
``graded`` gets, with equal odds, one of three switches (``labkit.tasks.switches``):
  /think      the target thinks: graded's running sums (re-checking one or two steps with
              probability ``--recheck``, as tiny-graded's targets), then the answer
  /no_think   the target is ``<think></think><answer>sum</answer>``
  no switch   a mix: a thought with probability ``--think``, else the empty thought, drawn per
              example and the same in every cell, so that RL without a switch has both modes
              to choose from on every prompt (what AdaptThink's RL shapes)
Departure: continued SFT from tiny-graded, which already thinks or answers directly, as Qwen3
continues from its reasoning model; its direct answers had no empty block, this SFT adds it.

The easy cells (``--easy-cells``, default ``2x1,3x1``) can weigh more: each of their examples
drawn ``--easy-weight`` times (each draw its own switch and mode), plus ``--easy-no-think`` more
/no_think pairs and ``--easy-free`` more pairs without a switch (a thought with probability
``--think``, so the no-switch think share stays the same in every cell). Why: the first build
(400 steps, no weighting) answered right under /no_think only about half the time on every
one-digit cell (2x1 0.50, 3x1 0.48, 5x1 0.41; its /think 0.88 on 2x1), and 0.66 even on 2x1's
train prompts, so a direct answer was nowhere reliable and an RL bonus for right direct answers
(AdaptThink, lab 98) never won a group. Target, stated before the rebuild: /no_think pass >= 0.9
on 2x1 and clearly above 0.48 on 3x1; the two-digit cells' /no_think pass still poor and below
/think's; both switches still obeyed (under 0.05 of the answers disobey), the no-switch think
share still about half in every cell.

What was tried (400 steps each, judged on the card alone; seed 0): ``--easy-no-think 2`` met the
/no_think target on 2x1 (0.91; 3x1 0.59) but the direct answers WITHOUT a switch, the ones RL
without a switch samples (the card's ``pass | direct``), fell to 0.25 on 2x1 and 0.28 on 3x1
(forced to answer after ``<think></think>``: 0.29 without the switch, 0.93 with it): what the
model learned answers under the switch's text, not without it. ``--easy-weight 3``: /no_think
0.77 on 2x1, 0.52 on 3x1; no switch, direct 0.40 and 0.37. So the no-switch direct answers need
their own targets: ``--easy-free 4`` (the default) adds four no-switch draws per easy example,
half of them direct, without changing any cell's no-switch think share. Its card
(the shipped one) answers right without a switch on 2x1 directly nearly as often as with a
thought, on 3x1 well below; under /no_think the 2x1 target was not met (0.9 was reached only
with the extra /no_think pairs, which cost the no-switch answers): the target that matters for
RL without a switch is the no-switch direct answer, stated here after the fact. Tried last,
``--easy-free 4 --easy-no-think 2 --steps 600`` (712 s): /no_think 0.83 on 2x1 and 0.75 on 3x1,
no switch direct 0.93 and 0.60, but /think disobeyed on 0.05 of the answers (0.14 on 2x2), the
no-switch think share fell to 0.19-0.39 per cell and thoughts fell below direct answers on 3x1
to 5x1: the switches' precondition at its margin and thinking paying on 2x2 alone, so not kept.

The card (``labkit_card.json``) records the command, the steps and wall time, the file size and,
per switch and cell, sampled accuracy (T = 1), the think rate (a non-empty thought), the
well-formed rate, and without a switch the pass rates of the direct answers and of the thoughts
apart (``pass | direct``, ``pass | think``); ``--G`` samples of each of the first ``--per-cell``
held-out prompts of a cell.

    OMP_NUM_THREADS=1 python scripts/make_fused_checkpoint.py
"""

import argparse
import json
import pathlib
import random
import sys
import time

import torch

sys.path.insert(0, str(pathlib.Path(__file__).parent))
from make_graded_checkpoint import SortedChunksSFT

import labkit as lk
from labkit.experiments.fused import group_stats, switch_values
from labkit.models.policy import BUILTIN, load_policy
from labkit.tasks.graded import MAX_RECHECKS, Graded
from labkit.tasks.switches import SWITCHES, fused_target, with_switch


def fused_pairs(
    task: Graded,
    think: float,
    recheck: float,
    seed: int,
    easy_cells=(),
    easy_weight: int = 1,
    easy_no_think: int = 0,
    easy_free: int = 0,
):
    """(prompt with switch, target) for every train example, drawn as the module docstring
    says; an example of ``easy_cells`` is drawn ``easy_weight`` times (each draw its own
    switch and mode), adds ``easy_no_think`` /no_think pairs and ``easy_free`` pairs without a
    switch (each a thought with probability ``think``)."""
    rng = random.Random(seed)
    pairs = []
    for e in task.train:
        ops, d = task.operands(e.prompt), e.columns["digits"]
        easy = e.columns["bucket"] in easy_cells
        for _ in range(easy_weight if easy else 1):
            pairs.append(fused_pair(e.prompt, ops, d, think, recheck, rng))
        for _ in range(easy_no_think if easy else 0):
            pairs.append(fused_pair(e.prompt, ops, d, think, recheck, rng, "no_think"))
        for _ in range(easy_free if easy else 0):
            pairs.append(fused_pair(e.prompt, ops, d, think, recheck, rng, "none"))
    return pairs


def fused_pair(prompt, ops, d, think, recheck, rng, switch=None):
    """One (prompt with switch, target): the switch drawn (or ``switch``), then the mode."""
    if switch is None:
        switch = rng.choice(list(SWITCHES))
    thinks = switch == "think" or (switch == "none" and rng.random() < think)
    rechecks, n_steps = [], (len(ops) - 1) * d
    if thinks and rng.random() < recheck:
        rechecks = rng.sample(range(n_steps), rng.randint(1, min(MAX_RECHECKS, n_steps)))
    mode = "think" if thinks else "no_think"
    return with_switch(prompt, switch), fused_target(ops, d, mode, rechecks)


def by_mode(idx: dict, values: dict) -> dict:
    """No switch: the pass rate of the direct answers (``pass | direct``) and of the thoughts
    (``pass | think``), per cell and pooled (a group without one is left out)."""
    out = {}
    for mode, thinks in (("direct", 0.0), ("think", 1.0)):
        sub = {c: [i for i in ix if values["think"][i] == thinks] for c, ix in idx.items()}
        out |= group_stats(
            {c: ix for c, ix in sub.items() if ix}, {f"pass | {mode}": values["pass"]}
        )
    return out


def without_out(argv: list[str]) -> list[str]:
    """The command's arguments less ``--out`` (the card lives in the output folder)."""
    out, skip = [], False
    for a in argv:
        if skip or a.startswith("--out="):
            skip = False
            continue
        skip = a == "--out"
        out += [] if skip else [a]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--learning-rate", type=float, default=1e-3)
    ap.add_argument("--base", default="tiny-graded", help="policy to start from")
    ap.add_argument("--chunks", type=int, default=4, help="forwards per batch, by length")
    ap.add_argument("--think", type=float, default=0.5, help="no switch: share that thinks")
    ap.add_argument("--recheck", type=float, default=1 / 3, help="share of thoughts re-checked")
    ap.add_argument("--easy-cells", default="2x1,3x1", help="cells whose direct answers to weight")
    ap.add_argument("--easy-weight", type=int, default=1, help="draws per easy-cell example")
    ap.add_argument("--easy-no-think", type=int, default=0, help="extra /no_think per easy example")
    ap.add_argument("--easy-free", type=int, default=4, help="extra no-switch per easy example")
    ap.add_argument("--per-cell", type=int, default=32, help="held-out probe prompts per cell")
    ap.add_argument("--G", type=int, default=8, help="samples of each probe prompt per switch")
    ap.add_argument("--out", default=str(BUILTIN["tiny-graded"].parent / "tiny-fused"))
    args = ap.parse_args()

    torch.set_num_threads(1)
    lk.set_seed(args.seed)
    task = Graded()
    model, tok = load_policy(args.base)
    easy = tuple(c for c in args.easy_cells.split(",") if c)
    pairs = fused_pairs(
        task,
        args.think,
        args.recheck,
        args.seed,
        easy,
        args.easy_weight,
        args.easy_no_think,
        args.easy_free,
    )
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
    t1 = time.perf_counter()
    cells = {}
    for s in SWITCHES:
        idx, values = switch_values(model, tok, s, args.per_cell, args.seed + 1, args.G)
        cells[s] = group_stats(idx, values) | (by_mode(idx, values) if s == "none" else {})
    probe_seconds = time.perf_counter() - t1
    model.save_pretrained(args.out)
    tok.save_pretrained(args.out)
    out = pathlib.Path(args.out)
    card = {
        "task": "graded, with a switch (labkit.tasks.switches)",
        "base": args.base,
        "command": " ".join(
            ["python scripts/make_fused_checkpoint.py", *without_out(sys.argv[1:])]
        ),
        "seed": args.seed,
        "steps": args.steps,
        "batch_size": args.batch_size,
        "learning_rate": args.learning_rate,
        "chunks": args.chunks,
        "targets": {
            "switches": {s: 1 / len(SWITCHES) for s in SWITCHES},
            "think (no switch)": args.think,
            "recheck": args.recheck,
            "max_rechecks": MAX_RECHECKS,
            "easy cells": list(easy),
            "easy weight": args.easy_weight,
            "easy extra /no_think": args.easy_no_think,
            "easy extra no switch": args.easy_free,
            "pairs": len(pairs),
        },
        "sft_seconds": round(sft_seconds, 1),
        "probe_seconds": round(probe_seconds, 1),
        "threads": torch.get_num_threads(),
        "probe": (
            f"held-out, the first {args.per_cell} prompts of each cell x {args.G} samples per "
            "switch, temperature 1, the task's 97 tokens; think: a non-empty thought"
        ),
        "size_bytes": sum(f.stat().st_size for f in out.iterdir() if f.name != "labkit_card.json"),
        "cells": cells,
    }
    (out / "labkit_card.json").write_text(json.dumps(card, indent=1) + "\n")
    print(json.dumps(card, indent=1))


if __name__ == "__main__":
    main()
