"""Held-out stats per difficulty cell of the ``graded`` task, shared by the experiments on it
(``r1_zero_graded``, ``curriculum``): pass rate, think rate and completion length per cell, for
the hard (two-digit) and easy (one-digit) cells pooled and over all, before and after training;
on request (``extra``) the length of correct completions and the re-checks per thought
(``kimi_length``).
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from labkit.models.policy import load_policy
from labkit.rewards.reasoning import think_format
from labkit.runs.evaluate import probe
from labkit.tasks.graded import Graded, graded_steps

HARD, EASY = ("2x2", "3x2"), ("2x1", "3x1", "4x1", "5x1")
STATS = ("pass", "think", "length")
EXTRA = ("length correct", "rechecks")
"""What ``extra=True`` adds: mean characters of the correct completions (NaN: none), and
redundant steps (re-checks, :func:`~labkit.tasks.graded.graded_steps`) per thought (NaN: none)."""


def redundant_steps(completion: str, prompt: str, digits: int) -> int:
    """Re-checks in a completion's thought: steps written again after they were made.

    >>> redundant_steps("<think>3+5=8 3+5=8 8+8=16</think><answer>16</answer>", "3+5+8=", 1)
    1
    """
    return sum(s.redundant for s in graded_steps(completion, Graded.operands(prompt), digits))


def heldout_cells(model, tokenizer, per_cell: int, seed: int, extra: bool = False) -> dict:
    """Held-out pass rate, think rate (:func:`~labkit.rewards.reasoning.think_format`) and mean
    completion length (characters) per cell, for the hard and easy cells pooled and over all:
    ``{"pass (2x2)": .., "think (hard)": .., ...}``; with ``extra`` the ``EXTRA`` stats too."""
    task = Graded()
    taken: dict[str, int] = {}
    examples = []
    for e in task.heldout:
        b = e.columns["bucket"]
        if taken.get(b, 0) < per_cell:
            taken[b] = taken.get(b, 0) + 1
            examples.append(e)
    p = probe(model, tokenizer, task, examples=examples, seed=seed)
    cells = {b: [i for i, e in enumerate(examples) if e.columns["bucket"] == b] for b in taken}
    groups = cells | {
        "hard": [i for b in HARD for i in cells.get(b, [])],
        "easy": [i for b in EASY for i in cells.get(b, [])],
        "all": list(range(len(examples))),
    }
    ok = np.array(p.correct, dtype=float)
    think = np.array(think_format(p.completions))
    length = np.array([len(c) for c in p.completions], dtype=float)
    out = {}
    for g, idx in groups.items():
        out |= {f"pass ({g})": ok[idx].mean(), f"think ({g})": think[idx].mean()}
        out[f"length ({g})"] = length[idx].mean()
    if extra:
        rechecks = [
            redundant_steps(c, e.prompt, e.columns["digits"]) if t else np.nan
            for c, e, t in zip(p.completions, examples, think)
        ]
        out |= extra_stats(groups, ok, length, np.array(rechecks, dtype=float))
    return out


def extra_stats(groups: dict, ok, length, rechecks) -> dict:
    """``EXTRA`` per group: mean length where ``ok``, mean of ``rechecks`` where not NaN (a
    thought); NaN for a group with none.

    >>> import numpy as np
    >>> s = extra_stats({"all": [0, 1, 2]}, np.array([1.0, 0.0, 1.0]), np.array([10.0, 20, 40]),
    ...                 np.array([np.nan, 1.0, 2.0]))
    >>> s["length correct (all)"], s["rechecks (all)"]
    (25.0, 1.5)
    """
    out = {}
    for g, idx in groups.items():
        right, r = length[idx][ok[idx] > 0], rechecks[idx]
        out[f"length correct ({g})"] = float(right.mean()) if len(right) else np.nan
        out[f"rechecks ({g})"] = float(np.nanmean(r)) if (~np.isnan(r)).any() else np.nan
    return out


def cold_start_cells(model: str, per_cell: int, seed: int, extra: bool = False) -> dict:
    """:func:`heldout_cells` of the shipped checkpoint ``model``, as loaded: the same for every
    arm of a seed, so probed once a process (a copy each call)."""
    return dict(_cold_start_cells(model, per_cell, seed, extra))


@functools.lru_cache(maxsize=16)
def _cold_start_cells(model: str, per_cell: int, seed: int, extra: bool) -> dict:
    return heldout_cells(*load_policy(model), per_cell=per_cell, seed=seed, extra=extra)


def changes(before: dict, after: dict) -> dict:
    """``<stat> before``, ``<stat> after`` and ``<stat> gain`` for every held-out stat.

    >>> changes({"pass (all)": 0.5}, {"pass (all)": 0.75})
    {'pass (all) before': 0.5, 'pass (all) after': 0.75, 'pass (all) gain': 0.25}
    """
    out = {}
    for k, b in before.items():
        out |= {f"{k} before": b, f"{k} after": after[k], f"{k} gain": after[k] - b}
    return out


def cell_table(summaries: pd.DataFrame, stat: str = "pass") -> pd.DataFrame:
    """Per arm and cell (easiest first), the mean over seeds of ``stat`` before and after RL
    and its gain: the per-difficulty table of a lab.

    >>> s = pd.DataFrame({"arm": ["a", "a"], "seed": [0, 1], "pass (2x1) before": [0.5, 0.7],
    ...                   "pass (2x1) after": [0.9, 0.9], "pass (2x1) gain": [0.4, 0.2]})
    >>> cell_table(s).round(2).to_dict("records")
    [{'arm': 'a', 'cell': '2x1', 'before': 0.6, 'after': 0.9, 'gain': 0.3}]
    """
    rows = []
    cells = [c for c in (*EASY, *HARD, "hard", "easy", "all") if f"{stat} ({c}) gain" in summaries]
    for arm, d in summaries.groupby("arm", sort=False):
        for c in cells:
            k = f"{stat} ({c})"
            rows.append(
                {"arm": arm, "cell": c}
                | {w: float(d[f"{k} {w}"].mean()) for w in ("before", "after", "gain")}
            )
    return pd.DataFrame(rows)
