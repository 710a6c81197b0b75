"""What a notebook's first cell costs: wall seconds of ``python -c "import labkit"`` in a fresh
process (the minimum of ``--repeats`` runs: the machine is shared and noisy), beside
``import torch`` alone (the floor: labkit.core is torch), and which heavy packages the import
loaded. ``--before DIR`` times another checkout's labkit in the same minute, the runs interleaved.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/import_time.py [--repeats 3 --before /tmp/old]
"""

import argparse
import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
HEAVY = [
    "torch",
    "numpy",
    "transformers",
    "tokenizers",
    "peft",
    "trl",
    "datasets",
    "accelerate",
    "huggingface_hub",
    "pandas",
    "pyarrow",
    "scipy",
    "sympy",
    "plotly",
    "ipywidgets",
    "anywidget",
    "torch._dynamo",
]


def run(code: str, root: pathlib.Path) -> tuple[float, str]:
    """Wall seconds of ``python -c code`` with ``root`` first on the path, and its stdout."""
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1"}
    t0 = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True, check=True
    )
    return time.perf_counter() - t0, out.stdout


def loaded(root: pathlib.Path) -> list[str]:
    """The packages of ``HEAVY`` in ``sys.modules`` after ``import labkit``."""
    code = f"import labkit, sys; print(' '.join(m for m in {HEAVY!r} if m in sys.modules))"
    return run(code, root)[1].split()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--before", type=pathlib.Path, help="another checkout, timed alongside")
    args = ap.parse_args()
    roots = {"labkit": ROOT} if args.before is None else {"before": args.before, "after": ROOT}
    times = {"import torch": []} | {f"import labkit ({k})": [] for k in roots}
    for _ in range(args.repeats):  # interleaved, so load changes hit every column alike
        times["import torch"].append(run("import torch", ROOT)[0])
        for k, root in roots.items():
            times[f"import labkit ({k})"].append(run("import labkit", root)[0])
    print(os.popen("uptime").read().rstrip())
    print(f"wall s of a fresh `python -c`, min of {args.repeats} (all runs)")
    for k, ts in times.items():
        print(f"  {k:24s} {min(ts):6.2f}   ({' '.join(f'{t:.2f}' for t in ts)})")
    for k, root in roots.items():
        print(f"loaded by import labkit ({k}): {' '.join(loaded(root))}")


if __name__ == "__main__":
    main()
