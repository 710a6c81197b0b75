"""Stored results: what an experiment's full run measured, shipped in the package.

``labkit/results/<name>.json`` holds how it ran (command, commit, library versions, date,
threads, wall time), the claims as they were stated when it ran, and one summary row per arm
and seed; ``<name>.parquet`` holds the curves the lab draws (arm, seed, step, metrics, as
float32). A lab opens on :func:`load` in seconds; the README's claims table and each lab's
"measured" section are generated from these files (``scripts/results_tables.py``), so a number
lives in one place.

``python scripts/run_experiment.py <name>`` runs an experiment in full and stores it.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import pathlib
import platform
import subprocess
import sys
from importlib import metadata

import pandas as pd

from labkit.experiments.claims import Claim
from labkit.experiments.harness import Result

STORE = pathlib.Path(__file__).resolve().parent.parent / "results"


def stored() -> list[str]:
    """The names of the stored results."""
    return sorted(p.stem for p in STORE.glob("*.json"))


def provenance(command: str) -> dict:
    """How a result was made: the command, labkit's commit (and whether the tree was dirty),
    library versions, the date (UTC), the machine's cores and the Python."""
    import torch
    import transformers

    root = STORE.parent.parent
    git = lambda *a: subprocess.run(
        ["git", *a], cwd=root, capture_output=True, text=True, check=False
    ).stdout.strip()
    return {
        "command": command,
        "commit": git("rev-parse", "--short", "HEAD") or None,
        "dirty": bool(git("status", "--porcelain", "--", "labkit")),
        "versions": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "trl": _installed("trl"),
            "python": platform.python_version(),
        },
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cores": os.cpu_count(),
        "machine": platform.machine(),
    }


def _installed(package: str) -> str | None:
    """The installed version of ``package`` (None: not installed)."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def significant(x: float, digits: int = 6) -> float:
    """``x`` to ``digits`` significant digits, as the summaries are stored: a difference of
    1.2e-8 stays 1.2e-08 (six *decimal places* would store it as 0.0, and an interval of zeros
    would then say "exactly equal").

    >>> significant(1.23456789e-8), significant(123456.789), significant(float("inf"))
    (1.23457e-08, 123457.0, inf)
    """
    return float(f"{x:.{digits}g}")


def summary_rows(summaries: pd.DataFrame) -> list[dict]:
    """One JSON-ready dict per summary row: floats to six significant digits, NaN as None."""
    rows = json.loads(summaries.to_json(orient="records"))  # arm, seed, ...: as they are
    for row, floats in zip(rows, summaries.select_dtypes("floating").to_dict("records")):
        row.update({c: None if math.isnan(v) else significant(v) for c, v in floats.items()})
    return rows


def store(result: Result, command: str | None = None) -> pathlib.Path:
    """Write ``result`` as ``labkit/results/<name>.json`` + ``.parquet``; returns the json."""
    STORE.mkdir(exist_ok=True)
    meta = {**result.meta, **provenance(command or " ".join(sys.argv))}
    doc = {
        "name": result.name,
        "meta": meta,
        "claims": [c.to_dict() for c in result.claims],
        "summaries": summary_rows(result.summaries),
    }
    path = STORE / f"{result.name}.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    curves = result.curves.copy()
    for c in curves.columns:
        if c not in ("arm", "seed", "step") and pd.api.types.is_float_dtype(curves[c]):
            curves[c] = curves[c].astype("float32")
    curves.to_parquet(STORE / f"{result.name}.parquet", index=False, compression="zstd")
    return path


def load(name: str) -> Result:
    """The stored result ``name`` (see :func:`stored`)."""
    path = STORE / f"{name}.json"
    if not path.exists():
        raise FileNotFoundError(
            f"no stored result {name!r}: stored are {stored()}; make it with "
            f"`python scripts/run_experiment.py {name}`"
        )
    doc = json.loads(path.read_text())
    curves_path = STORE / f"{name}.parquet"
    curves = pd.read_parquet(curves_path) if curves_path.exists() else pd.DataFrame()
    return Result(
        doc["name"],
        pd.DataFrame(doc["summaries"]),
        curves,
        [Claim(**c) for c in doc["claims"]],
        doc["meta"],
    )


def size_bytes() -> int:
    """Bytes of every stored result together."""
    return sum(p.stat().st_size for p in STORE.glob("*") if p.suffix in (".json", ".parquet"))
