"""Regenerate, from the stored results (``labkit/results/``), the README's claims table and
each lab's "measured" section; ``--check`` only reports what is stale (the tests run it).

    python scripts/results_tables.py [--check]
"""

from __future__ import annotations

import importlib
import json
import pathlib
import sys

from labkit.experiments import results, tables

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # also when loaded by path
from _sync import sync

ROOT = pathlib.Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BEGIN, END = "<!-- claims:begin -->", "<!-- claims:end -->"


def stored_with_labs() -> dict:
    """name -> (stored result, its lab's notebook name)."""
    out = {}
    for name in results.stored():
        exp = importlib.import_module(f"labkit.experiments.{name}").EXPERIMENT
        out[name] = (results.load(name), exp.lab)
    return out


def readme_text(found: dict) -> str:
    """README.md with the claims table between its markers regenerated."""
    text = README.read_text()
    head, rest = text.split(BEGIN)
    _, tail = rest.split(END)
    size = sum(f.stat().st_size for f in results.STORE.iterdir() if f.is_file())
    note = (
        f"{len(found)} stored results, {size / 1e6:.2f} MB in `labkit/results/` (JSON + parquet)."
    )
    return f"{head}{BEGIN}\n{tables.claims_table(found)}\n\n{note}\n{END}{tail}"


def lab_sources(found: dict) -> dict[pathlib.Path, str]:
    """Each lab notebook's JSON with its generated "measured" cell rewritten."""
    notebooks = {}  # a lab may show several experiments: each rewrites its own cell
    for name, (result, lab) in found.items():
        path = ROOT / "labs" / f"{lab}.ipynb"
        nb = notebooks.setdefault(path, json.loads(path.read_text()))
        mark = tables.MARK.format(name)
        cells = [c for c in nb["cells"] if "".join(c["source"]).startswith(mark)]
        if not cells:
            raise ValueError(f"{path} has no markdown cell starting with {mark!r}")
        cells[0]["source"] = tables.measured_section(result).splitlines(keepends=True)
    return {p: json.dumps(nb, indent=1, ensure_ascii=False) + "\n" for p, nb in notebooks.items()}


def main() -> int:
    found = stored_with_labs()
    files = {README: readme_text(found), **lab_sources(found)}
    return sync(files, check="--check" in sys.argv, script="scripts/results_tables.py", root=ROOT)


if __name__ == "__main__":
    sys.exit(main())
