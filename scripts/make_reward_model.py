"""Build the shipped reward model of the ``tiny`` policy (labkit/checkpoints/tiny-addition-rm).

Stage 2 of RLHF done once, reproducibly: a copy of the shipped policy with a scalar head and its
LM head as readout (``RewardModel(readout="head+logprob")``), fitted with the Bradley-Terry loss
on free pairs from the *train* prompts only: the reference answer preferred to near misses of it
(a wrong units digit, +-1, +-10, one digit changed, a digit dropped/added/swapped:
``labkit.pairs.near_miss_pairs``) and to clearly wrong numbers (``demonstration_pairs``).
Evaluated on held-out prompts on the pairs that matter for RL, the shipped policy's own correct
vs incorrect samples (``rollout_pairs``), and on clear errors. Deterministic on CPU per --seed.

    OMP_NUM_THREADS=1 python scripts/make_reward_model.py      # ~5 minutes on one core

The weak reward models of lab 36 (``tiny-addition-weak-rm-<k>``, k = 0, 1, 2: an ensemble whose
member 0 is the over-optimised proxy) are made by the same recipe with the classic readout,
the same pairs (``--data-seed 0``) and their own training seed (the order of the minibatches),
stored in float16 to keep them small (their held-out figures are measured after the rounding):

    for k in 0 1 2; do OMP_NUM_THREADS=1 python scripts/make_reward_model.py --readout head \
        --seed $k --data-seed 0 --half --out labkit/checkpoints/tiny-addition-weak-rm-$k; done
"""

import argparse
import json
import random
import time

import torch

import labkit as lk
from labkit.algos.pairs import demonstration_pairs, near_miss_pairs, rollout_pairs
from labkit.algos.reward_model import RewardModelConfig, train_reward_model
from labkit.models.policy import CHECKPOINTS, load_policy
from labkit.tasks import get_task


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=800)
    ap.add_argument("--out", default=str(CHECKPOINTS / "tiny-addition-rm"))
    ap.add_argument("--readout", default="head+logprob", choices=("head", "head+logprob"))
    ap.add_argument("--data-seed", type=int, default=None, help="the pairs' seed (default --seed)")
    ap.add_argument("--half", action="store_true", help="store the trunk in float16")
    args = ap.parse_args()
    data_seed = args.seed if args.data_seed is None else args.data_seed

    t0 = time.time()
    lk.set_seed(args.seed)
    task = get_task("addition")
    policy, tok = load_policy("tiny")
    train = near_miss_pairs(task, task.train, 4, seed=data_seed) + demonstration_pairs(
        task, task.train, seed=data_seed
    )
    random.Random(data_seed).shuffle(train)
    held = {
        "near": rollout_pairs(policy, tok, task, task.heldout, 8, seed=data_seed + 1),
        "clear": demonstration_pairs(task, task.heldout, seed=data_seed + 1),
    }
    probe = {k: v[:500] for k, v in held.items()}
    config = RewardModelConfig(
        learning_rate=3e-4,
        batch_size=64,
        max_steps=args.steps,
        warmup_steps=30,
        lr_scheduler_type="cosine",
        eval_every=100,
        seed=args.seed,
    )
    rm, log = train_reward_model(
        train, "tiny", tok, heldout=probe, config=config, readout=args.readout
    )
    if args.half:  # what is shipped is what is measured: round the trunk before measuring
        rm.lm.half().float()
    acc = {k: rm.accuracy(v) for k, v in held.items()}
    print(
        f"held-out pair accuracy: policy near misses {acc['near']:.3f} "
        f"({len(held['near'])} pairs), clear errors {acc['clear']:.3f} "
        f"({len(held['clear'])} pairs); {time.time() - t0:.0f} s"
    )
    if args.half:
        rm.lm.half()
    rm.save(args.out)
    hist = log.metrics.dropna(subset=["heldout/near/accuracy"])
    card = {
        "task": "addition",
        "policy": "tiny",
        "seed": args.seed,
        "data_seed": data_seed,
        "dtype": "float16" if args.half else "float32",
        "readout": rm.readout,
        "config": config.to_dict(),
        "train_pairs": len(train),
        "heldout_near_miss_accuracy": acc["near"],
        "heldout_near_miss_pairs": len(held["near"]),
        "heldout_clear_error_accuracy": acc["clear"],
        "history": hist[
            ["step", "loss", "heldout/near/accuracy", "heldout/clear/accuracy"]
        ].to_dict("records"),
        "seconds": round(time.time() - t0),
        "threads": torch.get_num_threads(),
    }
    with open(f"{args.out}/labkit_card.json", "w") as f:
        json.dump(card, f, indent=1)


if __name__ == "__main__":
    main()
