"""What the classic-RL experiments share: a run's per-step metrics, written as the run goes.

A classic run (DQN, a Gaussian policy, AlphaZero on tic-tac-toe) has no labkit ``Trainer`` to
write its run log, and takes seconds, so it is not checkpointed: :class:`StepLog` writes each
step's metrics to ``runs/<run_name>/metrics.jsonl`` (the file a lab's live figure reads,
``Experiment.partial_curves``) and keeps them for the run's ``Outcome``. A run killed half-way
starts again from step 0.

>>> import os, tempfile; saved = os.environ.get("LABKIT_RUNS")
>>> os.environ["LABKIT_RUNS"] = tempfile.mkdtemp()
>>> log = StepLog("demo/arm/seed-0")
>>> log({"step": 1, "loss": 0.5}); log({"step": 2, "loss": 0.25})
>>> log.frame()["loss"].tolist(), len(log.path.read_text().splitlines())
([0.5, 0.25], 2)
>>> _ = os.environ.pop("LABKIT_RUNS") if saved is None else os.environ.update(LABKIT_RUNS=saved)
"""

from __future__ import annotations

import json

import pandas as pd

from labkit.runs.log import runs_root


class StepLog:
    """Rows of metrics, one per step: appended to ``runs/<run_name>/metrics.jsonl`` at once."""

    def __init__(self, run_name: str):
        self.path = runs_root() / run_name / "metrics.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text("")  # a fresh run: a classic run is redone whole
        self.rows: list[dict] = []

    def __call__(self, row: dict) -> None:
        self.rows.append(row)
        with self.path.open("a") as f:
            f.write(json.dumps(row) + "\n")

    def frame(self) -> pd.DataFrame:
        """The rows so far as a DataFrame (one row per step)."""
        return pd.DataFrame(self.rows)


def tail_mean(m: pd.DataFrame, column: str, frac: float) -> float:
    """The mean of ``column`` over the last ``frac`` of the rows (at least one).

    >>> tail_mean(pd.DataFrame({"x": [0.0, 1.0, 2.0, 4.0]}), "x", 0.5)
    3.0
    """
    return float(m[column].iloc[-max(1, round(len(m) * frac)) :].mean())
