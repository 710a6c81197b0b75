"""The seed's length reward on the real model: mean |len - 50| over a CPU run of GRPO + LoRA.

SmolLM2-135M-Instruct (``load_policy("smollm2-offline")``), LoRA r=16 alpha=32 on every linear
layer (the seed's adapter), the shipped short prompts in SmolLM2's chat template, reward
``length_target`` = -|50 - len(completion)| (characters), G generations of at most L tokens.
Writes one row per step to ``benchmarks/smollm2_length_curve.csv`` (step, mean |len - 50|,
mean characters, mean tokens, fraction truncated, seconds) and prints the first and last
five-step means. Timings are noisy on a shared machine.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/smollm2_length_curve.py [--steps 40]
"""

import argparse
import csv
import pathlib
import time

import labkit as lk

OUT = pathlib.Path(__file__).with_name("smollm2_length_curve.csv")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--generations", type=int, default=8)
    ap.add_argument("--prompts", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=24)
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args()
    model, tok = lk.load_policy("smollm2-offline")
    policy = lk.models.add_lora(model, r=16, alpha=32)
    tr = lk.GRPOTrainer(
        policy,
        tokenizer=tok,
        reward_funcs=["length_target"],
        task="short_prompts",
        num_generations=a.generations,
        prompts_per_step=a.prompts,
        max_completion_length=a.max_tokens,
        learning_rate=a.lr,
        max_steps=a.steps,
        beta=0.0,
        seed=0,
        diagnostics=0,
    )
    rows = []
    with open(a.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "step",
                "mean_abs_len_minus_50",
                "mean_chars",
                "mean_tokens",
                "truncated_frac",
                "seconds",
            ]
        )
        for _ in range(a.steps):
            t0 = time.perf_counter()
            m = tr.step()
            s = tr.log.samples
            chars = s[s["step"] == m["step"]]["completion"].str.len().mean()
            row = [
                m["step"],
                -m["reward/mean"],
                chars,
                m["len/mean"],
                m["len/truncated_frac"],
                time.perf_counter() - t0,
            ]
            w.writerow([f"{v:.4g}" if isinstance(v, float) else v for v in row])
            f.flush()
            rows.append(row)
            print(
                f"step {row[0]:3d}  mean|len-50| {row[1]:6.1f}  chars {row[2]:6.1f}  "
                f"tokens {row[3]:5.1f}  truncated {row[4]:.2f}  {row[5]:.1f} s",
                flush=True,
            )
    s = tr.log.samples
    for k in (1, a.steps):  # what the completions look like at the start and at the end
        print(
            f"step {k} completions:",
            *[repr(c) for c in s[s["step"] == k]["completion"][:4]],
            sep="\n  ",
        )
    first = sum(r[1] for r in rows[:5]) / len(rows[:5])
    last = sum(r[1] for r in rows[-5:]) / len(rows[-5:])
    print(
        f"mean |len - 50|: first 5 steps {first:.1f} -> last 5 steps {last:.1f} "
        f"({a.generations} x {a.prompts} completions of <= {a.max_tokens} tokens, lr {a.lr})"
    )


if __name__ == "__main__":
    main()
