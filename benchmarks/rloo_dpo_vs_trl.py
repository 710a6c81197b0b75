"""Step time and peak memory of labkit's RLOO and DPO against TRL's RLOOTrainer and DPOTrainer.

Identical work on the shipped tiny policy, same seed:
- RLOO: 8 prompts x 8 generations, completion length 4, exact-match reward, lr 3e-4, no KL
  (beta 0: neither keeps a reference model), labkit with all its diagnostics on;
- DPO: 32 pairs a step (correct vs incorrect completions of the tiny policy), beta 0.1,
  lr 3e-5, a frozen reference model in both.
Each measurement runs in its own subprocess so peak resident memory (ru_maxrss) is its own.
Prints the median seconds per step (warm-up skipped), the peak RSS, and the ratios labkit / TRL.

    .venv/bin/python benchmarks/rloo_dpo_vs_trl.py [--steps 30]
"""

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile

import torch
from timing import step_times, trl_clock

import labkit as lk

P, G, L, PAIRS_PER_STEP = 8, 8, 4, 32


def _pairs():
    model, tok = lk.load_policy("tiny")
    task = lk.get_task("addition")
    return lk.pairs.rollout_pairs(model, tok, task, task.sample_prompts(512, random.Random(0)), 8)


def labkit_rloo(steps):
    tr = lk.GRPOTrainer(
        "tiny",
        reward_funcs=["exact_match"],
        seed=0,
        num_generations=G,
        prompts_per_step=P,
        max_completion_length=L,
        advantage_estimator="rloo",
        loss_type="grpo",
        beta=0.0,
        track_kl=False,
        learning_rate=3e-4,
        max_steps=steps,
        diagnostics=4,
    )
    return step_times(tr.step, steps)


def labkit_dpo(steps):
    tr = lk.DPOTrainer(
        "tiny",
        pairs=_pairs(),
        beta=0.1,
        learning_rate=3e-5,
        batch_size=PAIRS_PER_STEP,
        max_steps=steps,
    )
    return step_times(tr.step, steps)


def _trl_train(trainer_cls, config_cls, steps, data, **kw):
    clock = trl_clock()

    extra = {k: kw.pop(k) for k in ("reward_funcs",) if k in kw}
    with tempfile.TemporaryDirectory() as out:
        args = config_cls(
            output_dir=out,
            bf16=False,
            use_cpu=True,
            report_to=[],
            seed=0,
            activation_checkpointing=False,
            max_steps=steps,
            logging_steps=10**6,
            save_strategy="no",
            disable_tqdm=True,
            **kw,
        )
        trainer = trainer_cls(
            model=str(lk.models.BUILTIN["tiny"]),
            args=args,
            train_dataset=data,
            callbacks=[clock],
            processing_class=lk.load_policy("tiny")[1],
            **extra,
        )
        trainer.train()
    return clock.times


def trl_rloo(steps):
    from datasets import Dataset
    from trl import RLOOConfig, RLOOTrainer

    task = lk.get_task("addition")
    data = Dataset.from_dict(
        {"prompt": [e.prompt for e in task.train], "answer": [e.answer for e in task.train]}
    )
    return _trl_train(
        RLOOTrainer,
        RLOOConfig,
        steps,
        data,
        reward_funcs=lk.exact_match,
        per_device_train_batch_size=P * G,
        num_generations=G,
        max_completion_length=L,
        beta=0.0,
        learning_rate=3e-4,
        temperature=1.0,
    )


def trl_dpo(steps):
    from datasets import Dataset
    from trl import DPOConfig, DPOTrainer

    data = Dataset.from_list(_pairs())
    return _trl_train(
        DPOTrainer,
        DPOConfig,
        steps,
        data,
        per_device_train_batch_size=PAIRS_PER_STEP,
        beta=0.1,
        learning_rate=3e-5,
        max_length=16,
    )


RUNS = {
    "labkit_rloo": labkit_rloo,
    "trl_rloo": trl_rloo,
    "labkit_dpo": labkit_dpo,
    "trl_dpo": trl_dpo,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--only", choices=list(RUNS))
    args = ap.parse_args()
    if args.only:  # one measurement, in this (fresh) process
        t = statistics.median(RUNS[args.only](args.steps)[args.warmup :])
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # MiB (Linux: KiB)
        print(json.dumps({"step_s": t, "peak_mib": rss}))
        return
    print(f"torch threads: {torch.get_num_threads()}")
    res = {}
    for name in RUNS:
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--only",
                name,
                "--steps",
                str(args.steps),
                "--warmup",
                str(args.warmup),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        res[name] = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"{name}: {res[name]['step_s'] * 1000:.1f} ms/step (median), "
            f"peak RSS {res[name]['peak_mib']:.0f} MiB",
            flush=True,
        )
    for algo in ("rloo", "dpo"):
        a, b = res[f"labkit_{algo}"], res[f"trl_{algo}"]
        print(
            f"{algo.upper()} ratio labkit/TRL: step time {a['step_s'] / b['step_s']:.2f}, "
            f"peak memory {a['peak_mib'] / b['peak_mib']:.2f}"
        )


if __name__ == "__main__":
    main()
