"""The run log: every step's metrics and every sample, on disk as the run goes.

A run folder ``runs/<name>/`` holds ``config.json``, ``metrics.jsonl`` (one line per step),
``samples.jsonl`` (one line per completion: prompt, completion, each reward, advantage, length,
truncated, correct) and ``tokens.jsonl`` (per-token diagnostics of a few completions a step) and ``events.jsonl``
(changes made during the run: a new reward function, beta, ...; figures mark them).
Each line is flushed when written, so a crash or a failing reward function loses nothing that
was logged. Plots and widgets read a RunLog; they never reach into the trainer.
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import threading
from typing import TYPE_CHECKING

from labkit.runs.trackers import write_all

if TYPE_CHECKING:  # pandas is imported when a table is first asked for
    import pandas as pd

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; run folders are not guarded there
    fcntl = None

FILES = {
    "metrics": "metrics.jsonl",
    "samples": "samples.jsonl",
    "tokens": "tokens.jsonl",
    "events": "events.jsonl",
}


def runs_root() -> pathlib.Path:
    """Where runs go: ``$LABKIT_RUNS`` if set, else ``./runs``."""
    return pathlib.Path(os.environ.get("LABKIT_RUNS", "runs"))


def _clean(v):
    """JSON-safe: NaN/inf become None, tensors and numpy scalars become Python numbers."""
    if hasattr(v, "tolist"):
        v = v.tolist()
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    return v


class RunLog:
    """Records of one run, kept in memory and appended to ``path`` (None: memory only)."""

    def __init__(
        self,
        path: str | os.PathLike | None = None,
        config: dict | None = None,
        records: dict | None = None,
    ):
        self.path = pathlib.Path(path) if path is not None else None
        self.config = dict(config or {})
        self.records = {k: list((records or {}).get(k, [])) for k in FILES}
        self.lock = threading.Lock()
        self.sinks: list = []  # trackers that also get every row (labkit.runs.trackers)
        self._files = {}
        self._lock = None
        if self.path is not None:
            if records is None and (self.path / "config.json").exists():
                _refuse_if_written(self.path)  # by another process: its folder stays put
                _move_aside(self.path)  # a new run under a used name: keep the old one whole
            self.path.mkdir(parents=True, exist_ok=True)
            self._lock = _hold(self.path)  # until close(): other processes see it is in use
            self.write_config()
            # kept open for the life of the run (closed by close()), one flush per record;
            # given records (a resumed run) are written first
            self._files = {k: open(self.path / f, "w") for k, f in FILES.items()}  # noqa: SIM115
            for kind, rows in self.records.items():
                self._files[kind].writelines(json.dumps(r) + "\n" for r in rows)
                self._files[kind].flush()

    def write_config(self) -> None:
        (self.path / "config.json").write_text(json.dumps(self.config, indent=1, default=str))

    @classmethod
    def read(cls, path: str | os.PathLike) -> RunLog:
        """The run folder ``path`` in memory (see :func:`load_run`)."""
        return load_run(path)

    @classmethod
    def reopen(cls, path: str | os.PathLike, step: int) -> RunLog:
        """Continue writing the run in ``path`` after ``step``: later records are dropped
        (the steps a resumed run will redo; events logged at or after ``step``, too)."""
        old = load_run(path)
        return cls(path, old.config, _upto(old.records, step))

    def copy_from(self, other: RunLog, step: int) -> None:
        """Append ``other``'s records up to ``step`` (a fork starts with its parent's history)."""
        for kind, rows in _upto(other.records, step).items():
            self.log(kind, rows)

    @property
    def name(self) -> str:
        return self.path.name if self.path is not None else "run"

    def log(self, kind: str, rows: list[dict]) -> None:
        rows = [{k: _clean(v) for k, v in r.items()} for r in rows]
        with self.lock:
            self.records[kind].extend(rows)
            if kind in self._files:
                f = self._files[kind]
                f.writelines(json.dumps(r) + "\n" for r in rows)
                f.flush()
        if self.sinks:
            self.sinks = write_all(self.sinks, kind, rows)

    def log_step(self, metrics: dict, samples: list[dict] = (), tokens: list[dict] = ()) -> None:
        """One step: its metrics (must hold ``step``), its samples and token diagnostics."""
        self.log("samples", list(samples))
        self.log("tokens", list(tokens))
        self.log("metrics", [metrics])

    @property
    def events(self) -> pd.DataFrame:
        """Changes made while the run went (``step`` = the last step before the change)."""
        return self.frame("events")

    def frame(self, kind: str) -> pd.DataFrame:
        import pandas as pd

        with self.lock:
            return pd.DataFrame(list(self.records[kind]))

    @property
    def metrics(self) -> pd.DataFrame:
        """One row per step; columns are the metric keys (``reward/mean``, ``kl/k3``, ...)."""
        return self.frame("metrics")

    @property
    def samples(self) -> pd.DataFrame:
        """One row per completion, with its step."""
        return self.frame("samples")

    @property
    def tokens(self) -> pd.DataFrame:
        """One row per recorded completion, per-token lists in its columns."""
        return self.frame("tokens")

    def flush_trackers(self) -> None:
        """Write what the trackers buffer (TensorBoard's event file, trackio's queue)."""
        for s in self.sinks:
            s.flush()

    def close(self) -> None:
        for f in self._files.values():
            f.close()
        self._files = {}
        for s in self.sinks:
            s.close()
        if self._lock is not None:
            self._lock.close()  # releases the lock
            self._lock = None

    def __repr__(self) -> str:
        return f"RunLog({str(self.path)!r}, steps={len(self.records['metrics'])})"


def _upto(records: dict, step: int) -> dict:
    """Rows of steps <= ``step``; events (logged after their step) of steps < ``step``."""
    return {
        k: [
            r
            for r in rows
            if (r.get("step", 0) < step if k == "events" else r.get("step", 0) <= step)
        ]
        for k, rows in records.items()
    }


LOCK = ".writer"
"""A run folder's lock file: held (``flock``) by the process writing the run, holding its pid."""


class RunInUse(RuntimeError):
    """Another process is writing the run folder a new run was asked to use."""


def _hold(path: pathlib.Path):
    """Lock ``path``'s lock file for this process (released when the file closes); refuse
    when another process holds it (two runs of one name started at once). When this process
    holds it already (a run resumed while its first trainer is alive), the first keeps it."""
    if fcntl is None:
        return None
    f = open(path / LOCK, "a+")  # noqa: SIM115 - held open for the life of the run
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        pid = f.read().strip() or "?"
        f.close()
        if pid == str(os.getpid()):  # a run of this process (resumed, forked): it holds it
            return None
        raise RunInUse(
            f"{path} is being written by another process (pid {pid}): two runs of one "
            "name cannot share a folder; give this one another run_name"
        ) from None
    f.seek(0)
    f.truncate()
    f.write(str(os.getpid()))
    f.flush()
    return f


def _refuse_if_written(path: pathlib.Path) -> None:
    """Raise :class:`RunInUse` when another process holds ``path``'s lock (a run of this
    process may be moved aside: a notebook cell run again)."""
    lock = path / LOCK
    if fcntl is None or not lock.exists():
        return
    with open(lock, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.flock(f, fcntl.LOCK_UN)
        except BlockingIOError:
            f.seek(0)
            if f.read().strip() != str(os.getpid()):
                f.close()
                _hold(path)  # raises, naming the other process


def _move_aside(path: pathlib.Path) -> pathlib.Path:
    """Rename an earlier run folder to ``<name>.prev-<n>`` (its logs and checkpoints intact),
    so a new run of the same name neither overwrites it nor resumes from its checkpoints."""
    n = 1
    while path.with_name(f"{path.name}.prev-{n}").exists():
        n += 1
    dest = path.with_name(f"{path.name}.prev-{n}")
    path.rename(dest)
    print(f"{path} held an earlier run: moved it to {dest}")
    return dest


def load_run(path: str | os.PathLike) -> RunLog:
    """Read a run folder written by the trainer (also one still being written).

    ``path`` may be a folder or a run name under :func:`runs_root`.
    """
    p = pathlib.Path(path)
    if not p.exists() and (runs_root() / p).exists():
        p = runs_root() / p
    if not (p / "config.json").exists():
        raise FileNotFoundError(
            f"{p} is not a run folder (no config.json); runs live under {runs_root()}/<name>"
        )
    log = RunLog(None, json.loads((p / "config.json").read_text()))
    log.path = p
    for kind, fname in FILES.items():
        f = p / fname
        if f.exists():  # a partly written last line (a killed run) is skipped
            for line in f.read_text().splitlines():
                try:
                    log.records[kind].append(json.loads(line))
                except json.JSONDecodeError:
                    pass
    return log


def save_jsonl(path: str | os.PathLike, rows: list[dict]) -> None:
    """Write ``rows`` to ``path`` (one JSON object a line) via a temporary file and a rename:
    the data a run trains on (pairs, examples), beside its log."""
    path = pathlib.Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    os.replace(tmp, path)


def load_jsonl(path: str | os.PathLike) -> list[dict]:
    """The rows :func:`save_jsonl` wrote, in their order (a sampler's state indexes into them).

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "pairs.jsonl"
    >>> save_jsonl(path, [{"prompt": "1+1=", "chosen": "2", "rejected": "3"}])
    >>> load_jsonl(path)
    [{'prompt': '1+1=', 'chosen': '2', 'rejected': '3'}]
    """
    path = pathlib.Path(path)
    if not path.exists():
        raise FileNotFoundError(
            f"{path} is missing: the run's training data is needed to resume "
            "it; train again with a run_name (the data is saved with the run)"
        )
    return [json.loads(line) for line in path.read_text().splitlines()]
