"""Held-out probes of a fused thinking / non-thinking policy on the graded task: per cell and
switch, the pass rate, think rate and length (:func:`switch_cells`); and Qwen3's thinking budget,
the pass rate when the thought is cut at B steps and the policy answers from there
(:func:`budget_cells`). ``tiny-fused``'s card and ``labkit.experiments.adaptive_think`` use them.

>>> s = group_stats({"2x1": [0], "2x2": [1]}, {"pass": [1.0, 0.0], "think": [0.0, 1.0]})
>>> s["pass (easy)"], s["think (hard)"], s["pass (all)"]
(1.0, 1.0, 0.5)
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import torch

from labkit.experiments.cells import EASY, HARD
from labkit.models.rollout import rollout
from labkit.rewards.reasoning import think_format
from labkit.runs.evaluate import probe
from labkit.tasks.base import max_completion_tokens
from labkit.tasks.graded import Graded
from labkit.tasks.scratchpad import parse
from labkit.tasks.switches import cut_thought, with_switch


def heldout_examples(per_cell: int, cells=None, switch: str = "none") -> list:
    """The first ``per_cell`` held-out examples of each cell of ``graded`` (every cell, or
    those in ``cells``), in the split's order, their prompts ending with ``switch``."""
    taken: dict[str, int] = {}
    out = []
    for e in Graded().heldout:
        b = e.columns["bucket"]
        if (cells is None or b in cells) and taken.get(b, 0) < per_cell:
            taken[b] = taken.get(b, 0) + 1
            out.append(dataclasses.replace(e, prompt=with_switch(e.prompt, switch)))
    return out


def group_stats(cells: dict[str, list[int]], values: dict[str, list[float]]) -> dict:
    """``"<stat> (<group>)"``: each stat's mean over each cell's indices, over the hard and easy
    cells pooled and over all (a group with no index is left out)."""
    groups = cells | {
        "hard": [i for b in HARD for i in cells.get(b, [])],
        "easy": [i for b in EASY for i in cells.get(b, [])],
        "all": [i for idx in cells.values() for i in idx],
    }
    out = {}
    for g, idx in groups.items():
        if idx:
            out |= {f"{k} ({g})": float(np.asarray(v)[idx].mean()) for k, v in values.items()}
    return out


def cells_of(examples) -> dict[str, list[int]]:
    """Cell -> the indices of its examples, easiest cell first (one digit, then two)."""
    out: dict[str, list[int]] = {b: [] for b in (*EASY, *HARD)}
    for i, e in enumerate(examples):
        out.setdefault(e.columns["bucket"], []).append(i)
    return {b: idx for b, idx in out.items() if idx}


def switch_values(model, tokenizer, switch: str, per_cell: int, seed: int, samples: int = 1):
    """(cell -> indices, stat -> one value per completion) of :func:`switch_cells`' probe."""
    examples = heldout_examples(per_cell, switch=switch)
    p = probe(model, tokenizer, Graded(), examples=examples, samples=samples, seed=seed)
    values = {
        "pass": [float(c) for c in p.correct],
        "think": think_format(p.completions),
        "well_formed": [float(parse(c).well_formed) for c in p.completions],
        "length": [float(len(c)) for c in p.completions],
    }
    return cells_of(p.examples), values


def switch_cells(model, tokenizer, switch: str, per_cell: int, seed: int, samples: int = 1):
    """Held-out stats per cell with ``switch`` appended to each prompt: ``pass``, ``think`` (a
    non-empty thought, :func:`~labkit.rewards.reasoning.think_format`), ``well_formed`` and
    ``length`` (characters); ``samples`` at T = 1 per prompt, the task's 97 tokens."""
    return group_stats(*switch_values(model, tokenizer, switch, per_cell, seed, samples))


def sample(model, tokenizer, prompts: list[str], max_len: int, gen, chunk: int = 512):
    """One completion per prompt at T = 1, in batches of ``chunk``."""
    out = []
    for i in range(0, len(prompts), chunk):
        out += rollout(
            model, tokenizer, prompts[i : i + chunk], max_len, temperature=1.0, generator=gen
        ).completions
    return out


def budget_cells(model, tokenizer, budgets, per_cell: int, seed: int, samples: int = 1, cells=HARD):
    """Qwen3's thinking budget on ``cells`` under ``/think``: each prompt's completions are
    sampled once; for each budget B, a thought past B steps is cut to its first B, closed
    (:func:`~labkit.tasks.switches.cut_thought`) and the policy answers from there (one new
    sample, the same generator); a completion within the budget keeps its own answer.
    ``"pass B=<B>"`` and ``"pass full"`` (no cut) per cell and pooled, and ``"cut B=<B>"``, the
    share of completions cut.

    Departure: the budget counts thought steps, not tokens; the answer after a cut may use up to
    the task's 97 tokens again (a cut completion can be longer than the limit; an answer needs
    few)."""
    task = Graded()
    examples = [e for e in heldout_examples(per_cell, cells, "think") for _ in range(samples)]
    prompts = [e.prompt for e in examples]
    max_len = max_completion_tokens(task)
    gen = torch.Generator(next(model.parameters()).device).manual_seed(seed)
    full = sample(model, tokenizer, prompts, max_len, gen)
    values = {"pass full": [float(task.verify(c, e.answer)) for c, e in zip(full, examples)]}
    for B in budgets:
        prefixes = [cut_thought(c, B) for c in full]
        cut = [i for i, p in enumerate(prefixes) if p is not None]
        answers = sample(model, tokenizer, [prompts[i] + prefixes[i] for i in cut], max_len, gen)
        texts = list(full)
        for i, a in zip(cut, answers):
            texts[i] = prefixes[i] + a
        values[f"pass B={B}"] = [float(task.verify(c, e.answer)) for c, e in zip(texts, examples)]
        values[f"cut B={B}"] = [float(p is not None) for p in prefixes]
    return group_stats(cells_of(examples), values)


LABELS = {"think": "/think", "no_think": "/no_think", "none": "no switch"}
"""Switch -> its label in summary columns (``"think (2x2) /no_think"``)."""


def switch_stats(model, tokenizer, per_cell: int, seed: int) -> dict:
    """:func:`switch_cells` under each switch, ``"<stat> (<cell>) <label>"``, and the
    disobedience rates: ``disobey /think`` (no thought under /think), ``disobey /no_think`` (a
    thought under /no_think), over every cell."""
    out = {}
    for s, label in LABELS.items():
        cells = switch_cells(model, tokenizer, s, per_cell=per_cell, seed=seed)
        out |= {f"{k} {label}": v for k, v in cells.items()}
    out["disobey /think"] = 1 - out["think (all) /think"]
    out["disobey /no_think"] = out["think (all) /no_think"]
    return out


def budget_stats(model, tokenizer, budgets, per_cell: int, samples: int, seed: int) -> dict:
    """:func:`budget_cells`, the least-squares slope of the hard cells' pass rate over
    ``budgets`` (``budget slope (hard)``) and the gain of one thought step over none."""
    b = budget_cells(model, tokenizer, budgets, per_cell=per_cell, seed=seed, samples=samples)
    acc = [b[f"pass B={B} (hard)"] for B in budgets]
    b["budget slope (hard)"] = float(np.polyfit(budgets, acc, 1)[0])
    b["pass (hard): B=1 - B=0"] = b["pass B=1 (hard)"] - b["pass B=0 (hard)"]
    return b


def switch_table(summaries, arm: str, when: str = "") -> pd.DataFrame:
    """Per cell (easiest first) and switch, the think and pass rates of ``arm``, mean over
    seeds; ``when``: ``""`` (the cold start's columns) or ``"after"``."""
    s = summaries[summaries["arm"] == arm]
    rows = []
    for c in (*EASY, *HARD, "hard", "easy", "all"):
        row = {"cell": c}
        for label in LABELS.values():
            for stat in ("think", "pass"):
                key = f"{stat} ({c}) {label}" + (f" {when}" if when else "")
                if key in s:
                    row[f"{stat} {label}"] = float(s[key].mean())
        rows.append(row)
    return pd.DataFrame(rows).set_index("cell")


def budget_table(summaries, arm: str, budgets) -> pd.DataFrame:
    """Per budget (``B=0`` .. and ``full``), ``arm``'s pass rate per hard cell and pooled and
    the share of thoughts cut, mean over seeds."""
    s = summaries[summaries["arm"] == arm]
    rows = []
    for b in [f"B={B}" for B in budgets] + ["full"]:
        row = {"budget": b} | {
            f"pass ({c})": float(s[f"pass {b} ({c})"].mean()) for c in (*HARD, "hard")
        }
        if b != "full":
            row["cut (hard)"] = float(s[f"cut {b} (hard)"].mean())
        rows.append(row)
    return pd.DataFrame(rows).set_index("budget")
