"""Compare runs: several run folders as one long table (``lk.compare_frame``); the overlay
figure is ``labkit.plots.runs.compare_runs``."""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from labkit.runs.log import RunLog, load_run


def named_runs(runs) -> dict:
    """name -> RunLog, from RunLogs, folders or run names (under ``$LABKIT_RUNS``), or a dict
    whose keys name its runs (in-memory runs are otherwise all called "run").

    >>> a, b = RunLog(None), RunLog(None)
    >>> list(named_runs([a, b])), list(named_runs({"mu=1": a, "mu=2": b}))
    (['run', 'run (1)'], ['mu=1', 'mu=2'])
    """
    if isinstance(runs, Mapping):
        return {str(name): r if isinstance(r, RunLog) else load_run(r) for name, r in runs.items()}
    out = {}
    for r in [runs] if isinstance(runs, (str, RunLog)) else runs:
        log = r if isinstance(r, RunLog) else load_run(r)
        out[log.name if log.name not in out else f"{log.name} ({len(out)})"] = log
    return out


def compare_frame(runs, metrics=("reward/mean",)) -> pd.DataFrame:
    """Long table ``run, step, metric, value`` of several runs (for your own plots).

    >>> log = RunLog(None); log.log("metrics", [{"step": 1, "reward/mean": 0.5}])
    >>> compare_frame([log]).values.tolist()
    [['run', 1, 'reward/mean', 0.5]]
    """
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    rows = []
    for name, log in named_runs(runs).items():
        m = log.metrics
        for key in metrics:
            if key in m.columns:
                rows += [(name, s, key, v) for s, v in zip(m["step"], m[key])]
    return pd.DataFrame(rows, columns=["run", "step", "metric", "value"])
