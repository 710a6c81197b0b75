"""Build the shipped cold-start checkpoint of the ``tiny`` policy (labkit/checkpoints/tiny-addition).

Supervised training on the train split of 2-digit addition, stopped at the first evaluation
where held-out *sampled* accuracy reaches --target, so RL starts from a policy that knows the
format and is right about a third of the time. Deterministic on CPU for a given --seed.

    python scripts/make_tiny_checkpoint.py            # ~1 minute on 2 cores
"""

import argparse
import json

import labkit as lk
from labkit.algos.sft import sft
from labkit.models.policy import BUILTIN, tiny_policy
from labkit.runs.evaluate import accuracy
from labkit.tasks import get_task


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--target", type=float, default=0.35, help="held-out sampled accuracy")
    ap.add_argument("--max-steps", type=int, default=3000)
    ap.add_argument("--out", default=str(BUILTIN["tiny"]))
    args = ap.parse_args()

    lk.set_seed(args.seed)
    task = get_task("addition")
    model, tok = tiny_policy(args.seed)
    pairs = [(e.prompt, e.answer) for e in task.train]
    probe = task.heldout[:400]
    history = []

    def stop(step):
        acc = accuracy(model, tok, task, probe, temperature=1.0, seed=1)
        history.append({"step": step, "sampled_accuracy_probe": acc})
        print(f"step {step}: held-out sampled accuracy (400-prompt probe) {acc:.3f}")
        return acc >= args.target

    sft(model, tok, pairs, args.max_steps, stop=stop, seed=args.seed)
    sampled = accuracy(model, tok, task, temperature=1.0, samples=4, seed=2)
    greedy = accuracy(model, tok, task, temperature=0)
    print(f"held-out accuracy: sampled {sampled:.3f}, greedy {greedy:.3f}")
    model.save_pretrained(args.out)
    tok.save_pretrained(args.out)
    card = {
        "task": "addition",
        "seed": args.seed,
        "target": args.target,
        "history": history,
        "heldout_sampled_accuracy": sampled,
        "heldout_greedy_accuracy": greedy,
    }
    with open(f"{args.out}/labkit_card.json", "w") as f:
        json.dump(card, f, indent=1)


if __name__ == "__main__":
    main()
