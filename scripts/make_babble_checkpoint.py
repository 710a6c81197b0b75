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

``tiny-babble-wrong`` (lab 76, Dr. GRPO) is a policy whose rambling goes with its wrong answers,
so that at the cold start P(long | wrong) >> P(long | right) and GRPO's 1/|o| has wrong-and-long
answers to favour. ``--wrong-babble P``: a WRONG answer (on ``addition_ramble``'s grading, the
leading integer) gets a tail with probability P, a right one with ``--babble``. That alone does
not do it: the tiny policy cannot tell its own answer is wrong, and after 150 or 600 SFT steps it
rambled as often after right answers as after wrong ones (greedy or temperature-1 targets alike).
``--temperature 1`` takes the policy's own samples as targets (its wrong answers as it makes
them), and ``--hesitate`` starts a babbling target with a space: the first token is the decision
to ramble, taken before the answer, and the answers written after it are mostly wrong ones, so
"unsure, then a wrong answer, then rambling" is one mode the policy can learn (the card has the
gap). ``--half`` stores the weights in float16 (half the size; the card is measured on the
rounded weights, as the loader sees them).

    python scripts/make_babble_checkpoint.py          # ~1 minute on 2 cores
    python scripts/make_babble_checkpoint.py --babble 0.05 --wrong-babble 0.6 --temperature 1 \
        --hesitate --half --out labkit/checkpoints/tiny-babble-wrong  # ~1 minute, 1 thread
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
from labkit.tasks.ramble import leading_int

MAX_LEN = 16  # the max_completion_length of labs 76 and 77


def babble_pairs(
    model,
    tok,
    task,
    n: int,
    babble: float,
    max_tail: int,
    seed: int,
    wrong_babble: float | None = None,
    temperature: float = 0.0,
    hesitate: bool = False,
):
    """(prompt, target): the model's greedy answer (a sample at ``temperature`` > 0), + a
    random digit tail with prob ``babble`` (``wrong_babble`` instead after an answer whose
    leading integer is wrong; None: the same). ``hesitate``: a babbling target also starts with a
    space, so the policy's first token is the decision to ramble, taken before its answer."""
    rng = random.Random(seed)
    examples = [rng.choice(task.train) for _ in range(n)]
    answers = rollout(
        model,
        tok,
        [e.prompt for e in examples],
        task.max_answer_chars + 1,
        temperature=temperature,
        generator=torch.Generator().manual_seed(seed),
    ).completions
    pairs = []
    for e, a in zip(examples, answers):
        right = leading_int(a) == int(e.answer)
        p = babble if right or wrong_babble is None else wrong_babble
        if rng.random() < p:
            a += " " + "".join(rng.choice("0123456789") for _ in range(rng.randint(0, max_tail)))
            a = " " + a if hesitate else a
        pairs.append((e.prompt, a))
    return pairs


def measure(model, tok, task, n: int = 512) -> dict:
    """The policy at temperature 1 on the first ``n`` held-out prompts, ``MAX_LEN`` tokens:
    sampled accuracy on ``addition`` (any tail is wrong) and, graded on the leading integer
    (``addition_ramble``), the pass rate, mean length of right and wrong answers and how
    often each is long (past the answer and its eos) or truncated."""
    probe = task.heldout[:n]
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
    right = torch.tensor([leading_int(c) == int(e.answer) for c, e in zip(r.completions, probe)])
    lengths = r.lengths.float()
    long = lengths > task.max_answer_chars + 1
    frac = lambda x, m: x[m].float().mean().item() if m.any() else float("nan")
    return {
        "heldout_sampled_accuracy": sampled,
        "len_mean": lengths.mean().item(),
        "long_frac": long.float().mean().item(),
        "truncated_frac": r.truncated.float().mean().item(),
        "leading_pass_rate": right.float().mean().item(),
        "len_mean_right": frac(lengths, right),
        "len_mean_wrong": frac(lengths, ~right),
        "long_frac_right": frac(long, right),
        "long_frac_wrong": frac(long, ~right),
        "truncated_frac_right": frac(r.truncated, right),
        "truncated_frac_wrong": frac(r.truncated, ~right),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--babble", type=float, default=0.3, help="fraction of babbling targets")
    ap.add_argument(
        "--wrong-babble",
        type=float,
        default=None,
        help="fraction of babbling targets after a wrong answer (default: --babble)",
    )
    ap.add_argument(
        "--temperature",
        type=float,
        default=0.0,
        help="answers sampled at this temperature (default 0: greedy)",
    )
    ap.add_argument(
        "--hesitate",
        action="store_true",
        help="babbling targets start with a space: the first token decides to ramble",
    )
    ap.add_argument("--half", action="store_true", help="store the weights in float16")
    ap.add_argument("--max-tail", type=int, default=15, help="longest random digit tail")
    ap.add_argument("--steps", type=int, default=150)
    ap.add_argument("--learning-rate", type=float, default=1e-3)
    ap.add_argument("--out", default=str(BUILTIN["tiny"].parent / "tiny-babble"))
    args = ap.parse_args()

    torch.set_num_threads(1)
    lk.set_seed(args.seed)
    task = get_task("addition")
    model, tok = lk.load_policy("tiny")
    pairs = babble_pairs(
        model,
        tok,
        task,
        4096,
        args.babble,
        args.max_tail,
        args.seed,
        args.wrong_babble,
        args.temperature,
        args.hesitate,
    )
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
    if args.half:  # measure what the loader will see: the float16-rounded weights
        model.half().float()
    stats = measure(model, tok, task)
    print(stats)
    (model.half() if args.half else model).save_pretrained(args.out)
    tok.save_pretrained(args.out)
    card = {
        "task": "addition",
        "base": "tiny",
        "seed": args.seed,
        "babble": args.babble,
        "wrong_babble": args.babble if args.wrong_babble is None else args.wrong_babble,
        "max_tail": args.max_tail,
        "temperature": args.temperature,
        "hesitate": args.hesitate,
        "steps": args.steps,
        "learning_rate": args.learning_rate,
        "dtype": "float16" if args.half else "float32",
        "probe": "512 held-out prompts, temperature 1, 16 tokens",
        **stats,
    }
    with open(f"{args.out}/labkit_card.json", "w") as f:
        json.dump(card, f, indent=1)


if __name__ == "__main__":
    main()
