"""Build the shipped ``tiny-babble`` policy (labkit/checkpoints/tiny-babble): the ``tiny`` cold
start, taught by a short SFT to sometimes fail to stop, so completions CAN be long and wrong.

Why: the ``tiny`` cold start answers 2-digit addition in 2-3 characters and then emits EOS; at
temperature 1, 0 of 512 held-out samples ran past 4 tokens with a 16-token budget (1.2 % at
temperature 1.6), so no loss can change its length (Dr. GRPO's length bias, labs 76 and 77, needs room to drift).
Targets are the ``tiny`` policy's own greedy answers (self-distillation, no new arithmetic);
with probability --babble the answer is followed by a space and 0..--max-tail random digits ("fails to
stop"), which makes it wrong.
The tail starts with a space, so stopping or babbling is one decision right after the answer
and the answer's own digits are left alone. RL then decides how often, and how long, the policy babbles.

    python scripts/make_babble_checkpoint.py          # ~1 minute on 2 cores
"""

import argparse
import json
import random

import torch

import labkit as lk
from labkit.algos.sft import sft
from labkit.models.policy import BUILTIN
from labkit.models.rollout import rollout
from labkit.runs.evaluate import accuracy
from labkit.tasks import get_task

MAX_LEN = 16  # the max_completion_length of labs 76 and 77


def babble_pairs(model, tok, task, n: int, babble: float, max_tail: int, seed: int):
    """(prompt, target): the model's greedy answer, + a random digit tail with prob ``babble``."""
    rng = random.Random(seed)
    examples = [rng.choice(task.train) for _ in range(n)]
    answers = rollout(
        model, tok, [e.prompt for e in examples], task.max_answer_chars + 1, temperature=0.0
    ).completions
    pairs = []
    for e, a in zip(examples, answers):
        if rng.random() < babble:
            a += " " + "".join(rng.choice("0123456789") for _ in range(rng.randint(0, max_tail)))
        pairs.append((e.prompt, a))
    return pairs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--babble", type=float, default=0.3, help="fraction of babbling targets")
    ap.add_argument("--max-tail", type=int, default=15, help="longest random digit tail")
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--learning-rate", type=float, default=1e-3)
    ap.add_argument("--out", default=str(BUILTIN["tiny"].parent / "tiny-babble"))
    args = ap.parse_args()

    torch.set_num_threads(1)
    lk.set_seed(args.seed)
    task = get_task("addition")
    model, tok = lk.load_policy("tiny")
    pairs = babble_pairs(model, tok, task, 4096, args.babble, args.max_tail, args.seed)
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
    probe = task.heldout[:512]
    sampled = accuracy(
        model, tok, task, probe, temperature=1.0, max_completion_length=MAX_LEN, seed=1
    )
    r = rollout(
        model,
        tok,
        [e.prompt for e in probe],
        MAX_LEN,
        temperature=1.0,
        generator=torch.Generator().manual_seed(1),
    )
    stats = {
        "heldout_sampled_accuracy": sampled,
        "len_mean": r.lengths.float().mean().item(),
        "long_frac": (r.lengths > task.max_answer_chars + 1).float().mean().item(),
        "truncated_frac": r.truncated.float().mean().item(),
    }
    print(stats)
    model.save_pretrained(args.out)
    tok.save_pretrained(args.out)
    card = {
        "task": "addition",
        "base": "tiny",
        "seed": args.seed,
        "babble": args.babble,
        "max_tail": args.max_tail,
        "steps": args.steps,
        "learning_rate": args.learning_rate,
        "probe": "512 held-out prompts, temperature 1, 16 tokens",
        **stats,
    }
    with open(f"{args.out}/labkit_card.json", "w") as f:
        json.dump(card, f, indent=1)


if __name__ == "__main__":
    main()
