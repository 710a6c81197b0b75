"""Run an experiment in full (every arm on every seed) and store its result in the package.

    python scripts/run_experiment.py dapo [--seeds 0 1 2 3 4 5 6 7] [--workers 2]

Runs land in ``runs/<name>/<arm>/seed-<k>/``; a run that finished is read back, a killed one
resumes from its last checkpoint, so the command can simply be started again. The stored
result (``labkit/results/<name>.json`` + ``.parquet``) records this command, the commit, the
library versions, the date, the cores, the wall time of this call (``wall_s``) and the runs' own
seconds summed (``runs_s``: a run read back from an earlier call keeps its own time);
``python scripts/results_tables.py`` then regenerates the README's claims table and the labs'
"measured" sections from it.
"""

from __future__ import annotations

import argparse
import importlib
import shlex
import sys

from labkit.experiments.pool import exit_on_sigterm
from labkit.experiments.results import store
from labkit.experiments.tables import time_text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("name", help="a module of labkit.experiments with an EXPERIMENT")
    ap.add_argument("--seeds", type=int, nargs="+", help="default: the experiment's own")
    ap.add_argument("--arms", nargs="+", help="default: every arm")
    ap.add_argument("--workers", type=int, help="processes, one thread each (default: cores)")
    args = ap.parse_args()
    exit_on_sigterm()  # `kill` stops the worker processes too; the runs resume from checkpoints
    exp = importlib.import_module(f"labkit.experiments.{args.name}").EXPERIMENT
    result = exp.run(seeds=args.seeds, arms=args.arms, workers=args.workers)
    path = store(result, "python " + " ".join(shlex.quote(a) for a in sys.argv))
    print(result.claims_table()[["claim", "seeds", "effect", "ci_low", "ci_high", "verdict"]])
    print(f"stored: {path} ({time_text(result.meta)})")


if __name__ == "__main__":
    main()
