"""Every completion of a run, filtered and paged from the run files (not all in memory).

:class:`CompletionIndex` reads ``samples.jsonl`` once and keeps, per completion, only its byte
offset in the file and the small fields filters need (step, group, position in the step,
reward, correct, truncated, length, prompt). A page reads its rows back by offset; a regex over
the text reads only the rows the other filters left, and stops once the page is full. The
widget is ``labkit.widgets.CompletionBrowser``.
"""

from __future__ import annotations

import json
import pathlib
import re
import types

import numpy as np
import pandas as pd

from labkit.runs.log import FILES, runs_root

SHOWN = [
    "step",
    "group",
    "sample",
    "prompt",
    "completion",
    "reward",
    "correct",
    "truncated",
    "length",
    "advantage",
]
"""The columns of a page (plus every ``rewards/<fn>``)."""
EPISODE = ["episode", "turns", "tool_calls", "tool_failures", "cut"]
"""Multi-turn runs (``labkit.algos.multiturn``): the whole episode, the environment's text in
« », and its turns, tool calls, faults and the limit that cut it."""


def episode_text(segments) -> str:
    """An episode's [text, writer] runs as one string, the environment's text in « ».

    >>> episode_text([["[37*48=", "policy"], ["1776]", "env"], ["1776", "policy"]])
    '[37*48=«1776]»1776'
    """
    return "".join(t if w == "policy" else f"«{t}»" for t, w in segments)


def run_dir(run) -> pathlib.Path:
    """The folder of ``run``: a RunLog with a path, a folder, or a name under the runs root."""
    path = getattr(run, "path", run)
    if path is None:
        raise ValueError("this run is in memory only: give it a run_name so it is on disk")
    p = pathlib.Path(path)
    return p if p.exists() else runs_root() / str(path)


class CompletionIndex:
    """Offsets and filter fields of every completion of a run (see the module docstring).

    ``select(...)`` gives the row numbers that pass the filters; ``page(rows, start, size)``
    reads those rows' full records from disk.
    """

    def __init__(self, run):
        self.dir = run_dir(run)
        self.path = self.dir / FILES["samples"]
        cols = {
            k: []
            for k in (
                "offset",
                "step",
                "group",
                "sample",
                "reward",
                "correct",
                "truncated",
                "length",
                "prompt",
            )
        }
        last_step, k, pos = None, 0, 0
        with open(self.path, "rb") as f:
            for line in f:
                r = json.loads(line)
                k = k + 1 if r.get("step") == last_step else 0
                last_step = r.get("step")
                for key, v in (
                    ("offset", pos),
                    ("sample", k),
                    ("step", r.get("step")),
                    ("group", r.get("group")),
                    ("reward", r.get("reward")),
                    ("correct", r.get("correct")),
                    ("truncated", r.get("truncated")),
                    ("length", r.get("length")),
                    ("prompt", r.get("prompt")),
                ):
                    cols[key].append(v)
                pos += len(line)
        self.frame = pd.DataFrame(cols)
        for key in ("reward", "length"):
            self.frame[key] = pd.to_numeric(self.frame[key], errors="coerce")

    def __len__(self) -> int:
        return len(self.frame)

    def select(
        self,
        steps=None,
        reward=None,
        correct=None,
        truncated=None,
        length=None,
        prompt: str | None = None,
    ) -> np.ndarray:
        """Row numbers passing every given filter: ``steps``/``reward``/``length`` are
        (low, high) inclusive, ``correct``/``truncated`` True or False, ``prompt`` exact."""
        f, keep = self.frame, np.ones(len(self.frame), bool)
        for key, rng in (("step", steps), ("reward", reward), ("length", length)):
            if rng is not None:
                keep &= ((f[key] >= rng[0]) & (f[key] <= rng[1])).to_numpy()
        for key, want in (("correct", correct), ("truncated", truncated)):
            if want is not None:
                keep &= (f[key] == want).to_numpy()
        if prompt is not None:
            keep &= (f["prompt"] == prompt).to_numpy()
        return np.flatnonzero(keep)

    def read(self, rows) -> list[dict]:
        """The full records of ``rows`` (row numbers), read by offset."""
        out = []
        with open(self.path, "rb") as fh:
            for i in rows:
                fh.seek(int(self.frame["offset"].iat[i]))
                out.append(
                    {**json.loads(fh.readline()), "sample": int(self.frame["sample"].iat[i])}
                )
        return out

    def page(
        self,
        rows,
        start: int = 0,
        size: int = 50,
        regex: str | None = None,
    ) -> tuple[pd.DataFrame, int]:
        """``size`` records of ``rows`` from position ``start`` (with ``regex``: only those
        whose completion matches, read until the page is full); returns (page, next start)."""
        pattern = re.compile(regex) if regex else None
        got, i = [], start
        while i < len(rows) and len(got) < size:
            chunk = self.read(rows[i : i + size])
            for r in chunk:
                i += 1
                if pattern is None or pattern.search(str(r.get("completion", ""))):
                    got.append(r)
                    if len(got) == size:
                        break
        frame = pd.DataFrame(got)
        if "episode" in frame:
            frame["episode"] = [
                episode_text(e) if isinstance(e, list) else e for e in frame["episode"]
            ]
        cols = [c for c in SHOWN + EPISODE if c in frame] + [
            c for c in frame if c.startswith("rewards/")
        ]
        return frame[cols] if len(frame) else frame, i

    def tokens(self, step: int, sample: int):
        """The per-token record of (step, sample) as a one-row run for ``plots.run_step``, or
        None (only ``diagnostics`` completions a step have one)."""
        rows = []
        with open(self.dir / FILES["tokens"]) as fh:
            for line in fh:
                if f'"step": {step},' in line or f'"step": {step}}}' in line:
                    r = json.loads(line)
                    if r.get("step") == step and r.get("sample") == sample:
                        rows.append(r)
        return types.SimpleNamespace(tokens=pd.DataFrame(rows)) if rows else None
