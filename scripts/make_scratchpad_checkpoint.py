"""Build the cold starts of the reasoning labs (90-97): ``tiny-think`` and ``tiny-direct``.

Both are the ``tiny`` architecture trained from scratch by SFT on the ``scratchpad`` task (five
digits to add, ``labkit/tasks/scratchpad.py``), with the same steps, batch and learning rate:

- ``tiny-think`` (``--mode think``): half the targets think first
  (``<think>3+5=8 8+8=16 ...</think><answer>25</answer>``), half answer directly; a thought is
  written in digits (60 %), in letters (20 %) or mixes the two step by step (20 %): R1's cold
  start of "a few long chains of thought", with R1-Zero's language mixing in it.
- ``tiny-direct`` (``--mode direct``): every target is the direct answer.

The card (``labkit_card.json``) records held-out sampled accuracy (T = 1) free, forced to think
(prompt + ``<think>``) and forced to answer (prompt + ``<answer>``), the think rate, the mixing
rate and the mean length, measured on 512 held-out prompts.

    python scripts/make_scratchpad_checkpoint.py --mode think    # ~10 minutes alone on 2 cores (20 shared)
    python scripts/make_scratchpad_checkpoint.py --mode direct
"""

import argparse
import json
import random

import torch

import labkit as lk
from labkit.algos.sft import sft
from labkit.models.policy import BUILTIN, tiny_policy
from labkit.models.rollout import rollout
from labkit.tasks.scratchpad import NOTATIONS, Scratchpad, notation_of, parse, target

MAX_LEN = 64  # the longest target, 9+9+9+9+9, is 64 characters (its eos is cut: still verified)


def cold_start_pairs(task, mode: str, seed: int) -> list[tuple[str, str]]:
    """(prompt, target) for every train example, drawn as the module docstring says."""
    rng = random.Random(seed)
    pairs = []
    for e in task.train:
        ops = task.operands(e.prompt)
        think = mode == "think" and rng.random() < 0.5
        u = rng.random()
        note = (
            "digits"
            if u < 0.6
            else "letters"
            if u < 0.8
            else [rng.choice(NOTATIONS) for _ in ops[1:]]
        )
        pairs.append((e.prompt, target(ops, think, note)))
    return pairs


def probe(model, tok, task, n: int = 512, seed: int = 1) -> dict:
    """Held-out sampled accuracy free / forced to think / forced to answer, and trace stats."""
    ex = task.heldout[:n]
    out = {}
    for name, prefix in [("free", ""), ("forced_think", "<think>"), ("forced_direct", "<answer>")]:
        r = rollout(
            model,
            tok,
            [e.prompt + prefix for e in ex],
            MAX_LEN,
            temperature=1.0,
            generator=torch.Generator().manual_seed(seed),
        )
        texts = [prefix + c for c in r.completions]
        out[f"accuracy_{name}"] = sum(task.verify(c, e.answer) for c, e in zip(texts, ex)) / n
        if name == "free":
            thoughts = [parse(c).think for c in texts]
            mixed = [{notation_of(w) for w in t.split()} >= set(NOTATIONS) for t in thoughts if t]
            out["think_rate"] = sum(t is not None for t in thoughts) / n
            out["mixing_rate"] = sum(mixed) / max(1, len(mixed))
            out["format_rate"] = sum(parse(c).well_formed for c in texts) / n
            out["len_mean"] = r.lengths.float().mean().item()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=["think", "direct"], default="think")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=1200)
    ap.add_argument("--learning-rate", type=float, default=3e-3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    out = args.out or str(BUILTIN["tiny"].parent / f"tiny-{args.mode}")

    torch.set_num_threads(1)
    lk.set_seed(args.seed)
    task = Scratchpad()
    model, tok = tiny_policy(args.seed)
    pairs = cold_start_pairs(task, args.mode, args.seed)
    sft(
        model,
        tok,
        pairs,
        args.steps,
        batch_size=64,
        learning_rate=args.learning_rate,
        seed=args.seed,
        progress=False,
    )
    stats = probe(model, tok, task)
    print(stats)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    card = {
        "task": "scratchpad",
        "mode": args.mode,
        "base": "tiny (random init)",
        "seed": args.seed,
        "steps": args.steps,
        "batch_size": 64,
        "learning_rate": args.learning_rate,
        "probe": "512 held-out prompts, temperature 1, 64 tokens",
        **stats,
    }
    with open(f"{out}/labkit_card.json", "w") as f:
        json.dump(card, f, indent=1)


if __name__ == "__main__":
    main()
