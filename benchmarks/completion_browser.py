"""How fast the completion browser opens a 100k-completion run (the goal: in under a few
seconds). Writes a run folder of N completion rows shaped like labkit's (782 steps x 128,
rewards, prompts, per-token rows for 4 a step), then times: building the index (one pass over
samples.jsonl), a filtered page, a regex page, and the whole widget opening.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/completion_browser.py [--n 100000]
"""

import argparse
import json
import pathlib
import random
import tempfile
import time

from labkit.runs.browse import CompletionIndex


def write_run(folder: pathlib.Path, n: int, B: int = 128, seed: int = 0) -> None:
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps({"algorithm": "grpo"}))
    with open(folder / "samples.jsonl", "w") as s, open(folder / "tokens.jsonl", "w") as t:
        for i in range(n):
            step, k = i // B + 1, i % B
            a, b = rng.randrange(10, 100), rng.randrange(10, 100)
            c = str(a + b + rng.choice([0, 0, 1, -1, 10]))
            r = float(c == str(a + b))
            s.write(
                json.dumps(
                    {
                        "step": step,
                        "group": k // 4,
                        "prompt": f"{a}+{b}=",
                        "completion": c,
                        "answer": str(a + b),
                        "reward": r,
                        "advantage": r - 0.5,
                        "length": len(c) + 1,
                        "truncated": False,
                        "correct": r == 1.0,
                        "rewards/exact_match": r,
                    }
                )
                + "\n"
            )
            if k < 4:
                t.write(
                    json.dumps(
                        {
                            "step": step,
                            "sample": k,
                            "prompt": f"{a}+{b}=",
                            "tokens": list(c) + ["</s>"],
                            "advantage": r - 0.5,
                            "logp": [-0.1] * (len(c) + 1),
                        }
                    )
                    + "\n"
                )
    for name in ("metrics.jsonl", "events.jsonl"):
        (folder / name).write_text("")


def clock(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=100_000)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = pathlib.Path(tmp) / "big"
        _, t_write = clock(lambda: write_run(run, a.n))
        idx, t_index = clock(lambda: CompletionIndex(run))
        rows, t_select = clock(lambda: idx.select(steps=(300, 700), correct=False))
        _, t_page = clock(lambda: idx.page(rows, 0, 50))
        _, t_regex = clock(lambda: idx.page(idx.select(), 0, 50, regex=r"^1\d\d$"))
        _, t_tokens = clock(lambda: idx.tokens(500, 2))
        from labkit.widgets import CompletionBrowser

        _, t_widget = clock(lambda: CompletionBrowser(run))
        size = (run / "samples.jsonl").stat().st_size / 2**20
    print(f"{a.n} completions, samples.jsonl {size:.1f} MB (written in {t_write:.1f} s)")
    for name, t in [
        ("index (one pass)", t_index),
        ("select steps 300-700, wrong", t_select),
        ("page of 50", t_page),
        ("regex page of 50", t_regex),
        ("token view of one row", t_tokens),
        ("widget opens (index + page)", t_widget),
    ]:
        print(f"  {name:30s} {t:7.3f} s")


if __name__ == "__main__":
    main()
