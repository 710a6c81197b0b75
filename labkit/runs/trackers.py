"""Trackers that also get a run: TensorBoard and trackio, written locally, from the run log.

``report_to=("tensorboard", "trackio")`` (a config field, as TRL's ``report_to``) adds a sink
to the run's :class:`~labkit.runs.log.RunLog`: every metrics row goes to the tracker as
``train/<name>``, with TRL's name where TRL has the metric (``reward/mean`` -> ``train/reward``,
``len/mean`` -> ``train/completions/mean_length``, ...; ``TRL_NAMES``) and labkit's otherwise
(``train/kl/k1``), so a dashboard of TRL runs shows labkit runs beside them. trackio also gets
each step's completions as a table named ``completions`` (TRL's columns: step, prompt,
completion, one per reward function, what ``log_extra`` added, advantage; labkit adds reward,
length and correct). TensorBoard writes event files to ``runs/<run_name>/tensorboard`` (a run
without a name: a temporary folder, printed);
trackio writes its local database (``$TRACKIO_DIR``, default ``~/.cache/huggingface/trackio``),
``trackio show`` opens it. A tracker that fails is named in one warning and dropped; the run
and its own log go on.
"""

from __future__ import annotations

import math
import pathlib
import tempfile
import warnings

TRL_NAMES = {
    "reward/mean": "reward",
    "reward/std": "reward_std",
    "adv/frac_zero_std": "frac_reward_zero_std",
    "clip/ratio_low": "clip_ratio/low_mean",
    "clip/ratio_high": "clip_ratio/high_mean",
    "clip/region": "clip_ratio/region_mean",
    "len/mean": "completions/mean_length",
    "len/truncated_frac": "completions/clipped_ratio",
    "lr": "learning_rate",
}
"""labkit's metric key -> TRL GRPOTrainer's logged name, where they are the same quantity
(``loss``, ``grad_norm``, ``entropy``, ``kl``, ``rewards/<fn>/mean`` have one name in both)."""


def tracker_name(key: str) -> str:
    """The tag a metric gets in a tracker: ``train/`` + TRL's name, else labkit's.

    >>> tracker_name("reward/mean"), tracker_name("kl/k3"), tracker_name("rewards/f/mean")
    ('train/reward', 'train/kl/k3', 'train/rewards/f/mean')
    """
    return "train/" + TRL_NAMES.get(key, key)


def _scalars(row: dict) -> dict:
    """A metrics row's finite numbers by tracker tag (``step`` left out)."""
    return {
        tracker_name(k): float(v)
        for k, v in row.items()
        if k != "step"
        and isinstance(v, (int, float))
        and not isinstance(v, bool)
        and math.isfinite(v)
    }


class TensorBoardSink:
    """Metrics rows as scalars in TensorBoard event files under ``log_dir`` (a run in memory:
    a new temporary folder, printed), made on the first row."""

    def __init__(self, log_dir: str | pathlib.Path | None):
        self.log_dir, self.writer = log_dir, None

    def write(self, kind: str, rows: list[dict]) -> None:
        if kind != "metrics" or not rows:
            return
        if self.writer is None:
            from torch.utils.tensorboard import SummaryWriter

            if self.log_dir is None:
                self.log_dir = tempfile.mkdtemp(prefix="labkit-tensorboard-")
                print(f"TensorBoard event files of this run (no run_name) go to {self.log_dir}")
            self.writer = SummaryWriter(log_dir=str(self.log_dir))
        for row in rows:
            for tag, v in _scalars(row).items():
                self.writer.add_scalar(tag, v, row["step"])

    def flush(self) -> None:
        if self.writer is not None:
            self.writer.flush()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


class TrackioSink:
    """Metrics rows and each step's completions table in a local trackio project."""

    def __init__(self, project: str, name: str, config: dict, resume: str = "never"):
        self.project, self.name, self.config, self.resume = project, name, config, resume
        self.run = None

    def _open(self):
        if self.run is None:
            import trackio

            self.run = trackio.init(
                project=self.project,
                name=self.name,
                config=self.config,
                resume=self.resume,
                auto_log_cpu=False,
                auto_log_gpu=False,
            )
            self.resume = "allow"  # opened again after close(): the same run goes on
        return self.run

    def write(self, kind: str, rows: list[dict]) -> None:
        if kind == "metrics":
            for row in rows:
                self._open().log(_scalars(row), step=row["step"])
        elif kind == "samples" and rows:
            import pandas as pd
            import trackio

            table = trackio.Table(dataframe=pd.DataFrame([completion_row(r) for r in rows]))
            self._open().log({"completions": table}, step=rows[0]["step"])

    def flush(self) -> None:
        self.close()

    def close(self) -> None:
        if self.run is not None:
            self.run.finish()
            self.run = None


SAMPLE_KEYS = ("group", "answer", "truncated", "episode", "tool_failures")


def completion_row(row: dict) -> dict:
    """A sample row as a row of TRL's completions table: ``rewards/<fn>`` as ``<fn>``, the
    advantage last; JSON-like values (an episode's segments) as text."""
    out = {"step": row["step"], "prompt": row.get("prompt"), "completion": row.get("completion")}
    for k, v in row.items():
        if k in out or k in SAMPLE_KEYS or k == "advantage":
            continue
        name = k.split("/", 1)[1] if k.startswith("rewards/") else k
        out[name] = v if isinstance(v, (int, float, str, bool, type(None))) else str(v)
    out["advantage"] = row.get("advantage")
    return out


def trackers(
    report_to,
    *,
    run_dir: pathlib.Path | None,
    run_name: str,
    project: str,
    config: dict,
    resume: bool = False,
) -> list:
    """The sinks for ``report_to`` (nothing is opened before the first row); ``resume``: the
    run goes on from a checkpoint (trackio appends to the run of that name)."""
    sinks = []
    for name in report_to:
        if name == "tensorboard":
            sinks.append(TensorBoardSink(None if run_dir is None else run_dir / "tensorboard"))
        elif name == "trackio":
            sinks.append(TrackioSink(project, run_name, config, "allow" if resume else "never"))
    return sinks


def write_all(sinks: list, kind: str, rows: list[dict]) -> list:
    """Hand ``rows`` to each sink; a sink that raises is named in a warning and dropped (the
    run's own log has the rows). Returns the sinks still working."""
    kept = []
    for s in sinks:
        try:
            s.write(kind, rows)
            kept.append(s)
        except Exception as e:  # noqa: BLE001 - a tracker must not stop the run
            warnings.warn(
                f"{type(s).__name__} failed ({type(e).__name__}: {e}); it gets no more of this "
                "run (the run log in runs/ has everything)",
                stacklevel=3,
            )
    return kept
