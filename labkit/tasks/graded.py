"""Graded sums: the scratchpad task with a difficulty that varies from prompt to prompt.

Each prompt adds ``k`` numbers of ``d`` digits; a cell ``"kxd"`` is one (k, d). The default pool
has six cells in equal shares, easiest first: ``2x1`` (``"3+5="``), ``3x1``, ``4x1``, ``5x1``
(scratchpad's prompt), ``2x2`` (``"07+35="``) and ``3x2`` (``"12+07+93="``). A thought is a
chain of running sums, as in scratchpad, over the operands' place values: the first operand
whole, then each later one tens first (:func:`place_values`):
``"12+07+93="`` -> ``12+0=12 12+7=19 19+90=109 109+3=112``. A correct thought has (k - 1) d
steps, so its length grows with k and with d, and each step adds one column. A direct answer
(``<answer>112</answer>``) adds the k numbers in one forward pass, which a tiny policy does for
two digits and hardly for three two-digit numbers. Easy and hard prompts meet in one batch:
the setting of R1-Zero's "length grows with accuracy", Kimi k1.5's length reward and
long2short, and curricula (arXiv 2501.12948, 2501.12599).

A redundant step is a re-check: a step written again after it was made
(``3+5=8 3+5=8 8+8=16``). :func:`graded_steps` labels it correct and ``redundant``: it adds
nothing and costs nothing but length, so a length reward can remove it without losing accuracy.
Each example's ``columns`` carry its cell (``bucket``), ``n_operands``, ``digits`` and
``carries`` (column carries adding the operands one at a time), which reward functions receive
by name; :func:`bucket_report` gives per cell the pass rate, think rate, thought length,
re-check rate and the spread of pass rates over prompts.

Departures from ``scratchpad``: a step adds one place value (``12+30=42 42+4=46``), not a whole
two-digit operand (``12+34=46``), so every step is a one-column addition, the kind a tiny policy
learns (a cold start on whole two-digit steps learned none within its budget); one notation,
digits (:func:`graded_steps` reads letters too); steps are matched to the chain in order,
re-checks skipped, not position by position; ``2x1`` has only 100 prompts, so each cell holds
out a fifth of its prompts at most (``n_heldout_per_cell`` at most) and the train split repeats
a small cell's other prompts to fill its share.
"""

from __future__ import annotations

import inspect
import random
from collections import defaultdict
from dataclasses import dataclass

from labkit.tasks.arithmetic import parse_int
from labkit.tasks.base import Example, Task
from labkit.tasks.scratchpad import (
    NOTATIONS,
    Scratchpad,
    Step,
    chain,
    notation_of,
    parse,
    step_text,
)

CELLS = ((2, 1), (3, 1), (4, 1), (5, 1), (2, 2), (3, 2))
"""(operands, digits) of the default cells, easiest first (reports: by digits, then operands)."""
MAX_RECHECKS = 2  # re-checks a cold-start thought holds at most: room left for them


def bucket(n_operands: int, digits: int) -> str:
    """A cell's name: ``bucket(3, 2)`` -> ``"3x2"`` (three operands of two digits)."""
    return f"{n_operands}x{digits}"


def column_carries(a: int, b: int) -> int:
    """Carries of ``a + b`` added column by column.

    >>> column_carries(46, 56), column_carries(12, 34), column_carries(95, 5)
    (2, 0, 2)
    """
    n = carry = 0
    while a or b:
        carry = int(a % 10 + b % 10 + carry >= 10)
        n, a, b = n + carry, a // 10, b // 10
    return n


def carries(operands: list[int]) -> int:
    """Column carries over the whole chain of running sums.

    >>> carries([3, 5, 8]), carries([12, 34, 56])
    (1, 2)
    """
    return sum(column_carries(s, x) for s, x, _ in chain(operands))


def place_values(operands: list[int], digits: int = 1) -> list[int]:
    """What a thought adds, in order: the first operand whole, then each later operand split into
    its ``digits`` place values, highest first (a zero place is still a step).

    >>> place_values([12, 34, 56], 2), place_values([3, 5, 8])
    ([12, 30, 4, 50, 6], [3, 5, 8])
    """
    out = operands[:1]
    for x in operands[1:]:
        out += [x // 10**p % 10 * 10**p for p in reversed(range(digits))]
    return out


def steps_of(operands: list[int], digits: int = 1) -> list[str]:
    """The steps a correct thought writes: scratchpad's running sums over :func:`place_values`
    (``(k - 1) * digits`` steps).

    >>> steps_of([3, 5, 8]), steps_of([12, 34], 2)
    (['3+5=8', '8+8=16'], ['12+30=42', '42+4=46'])
    """
    return [step_text(s, x, t) for s, x, t in chain(place_values(operands, digits))]


def graded_trace(operands: list[int], digits: int = 1, rechecks=()) -> str:
    """The steps of :func:`steps_of`, step i written twice for each i in ``rechecks`` (a
    re-check).

    >>> graded_trace([3, 5, 8]), graded_trace([3, 5, 8], rechecks=[0])
    ('3+5=8 8+8=16', '3+5=8 3+5=8 8+8=16')
    >>> graded_trace([4, 34], 2)
    '4+30=34 34+4=38'
    """
    out = []
    for i, step in enumerate(steps_of(operands, digits)):
        out += [step] * (2 if i in rechecks else 1)
    return " ".join(out)


def graded_target(operands: list[int], digits: int = 1, think: bool = True, rechecks=()) -> str:
    """A whole completion: ``<think>graded_trace</think><answer>sum</answer>``, or the answer.

    >>> graded_target([3, 5], rechecks=[0]), graded_target([3, 5], think=False)
    ('<think>3+5=8 3+5=8</think><answer>8</answer>', '<answer>8</answer>')
    """
    thought = f"<think>{graded_trace(operands, digits, rechecks)}</think>" if think else ""
    return f"{thought}<answer>{sum(operands)}</answer>"


@dataclass
class GradedStep(Step):
    """A step labelled against the chain; ``redundant``: correct, but a step already made."""

    redundant: bool = False


def graded_steps(completion: str, operands: list[int], digits: int = 1) -> list[GradedStep]:
    """The thought's steps (space-separated), read in order against the chain: the next true
    step is correct and moves on; a true step already made is correct and ``redundant`` (a
    re-check); anything else is wrong. No thought: no steps.

    >>> c = "<think>3+5=8 3+5=8 8+8=17 8+8=16</think><answer>16</answer>"
    >>> [(s.correct, s.redundant) for s in graded_steps(c, [3, 5, 8])]
    [(True, False), (True, True), (False, False), (True, False)]
    """
    start, stop = completion.find("<think>"), completion.find("</think>")
    if start < 0 or stop < start:
        return []
    true = chain(place_values(operands, digits))
    want = [{step_text(s, x, t, n) for n in NOTATIONS} for s, x, t in true]
    out, pos, i = [], start + len("<think>"), 0
    for text in completion[pos:stop].split(" "):
        ahead = i < len(want) and text in want[i]
        again = any(text in w for w in want[:i])
        out.append(
            GradedStep(
                text, pos, pos + len(text), ahead or again, notation_of(text), again and not ahead
            )
        )
        i, pos = i + ahead, pos + len(text) + 1
    return out


class Graded(Task):
    """Sums of ``k`` numbers of ``d`` digits, one cell per (k, d), the cells in equal shares (see
    the module docstring).

    Per cell, ``min(n_heldout_per_cell, prompts // 5)`` distinct prompts are held out; the train
    split draws ``n_train / len(cells)`` examples from the cell's other prompts (repeating them
    when there are fewer). Both splits are shuffled, so any prefix mixes the cells.

    >>> t = Graded(); len(t.train), len(t.heldout), sorted(t.columns(t.heldout)["bucket"])[0]
    (19998, 660, '2x1')
    >>> t.verify("<think>x</think><answer>25</answer>", "25"), t.verify("25", "25")
    (True, False)
    """

    name = "graded"

    def __init__(
        self,
        cells=CELLS,
        n_train: int = 20000,
        n_heldout_per_cell: int = 128,
        seed: int = 0,
    ):
        self.cells = [tuple(c) for c in cells]
        for k, d in self.cells:
            if not (2 <= k <= 8 and 1 <= d <= 2):
                raise ValueError(f"cells: {(k, d)} is not (operands 2-8, digits 1-2)")
        self.n_train, self.n_heldout_per_cell, self.seed = n_train, n_heldout_per_cell, seed
        rng = random.Random(seed)
        self.train, self.heldout = [], []
        for k, d in self.cells:
            held, train = self.split_cell(k, d, n_train // len(self.cells), rng)
            self.heldout += held
            self.train += train
        rng.shuffle(self.train)
        rng.shuffle(self.heldout)

    def split_cell(self, k: int, d: int, share: int, rng: random.Random):
        """(held-out, train) examples of one cell: disjoint prompts."""
        n = 10 ** (k * d)
        h = min(self.n_heldout_per_cell, n // 5)
        if h + share <= n:
            codes = rng.sample(range(n), h + share)
            rest = codes[h:]
        else:  # a small cell: every other prompt, repeated to fill the share
            codes = rng.sample(range(n), n)
            rest = (codes[h:] * (share // (n - h) + 1))[:share]
        ex = lambda code: self.example([code // 10 ** (d * i) % 10**d for i in range(k)], d)
        return [ex(c) for c in codes[:h]], [ex(c) for c in rest]

    @staticmethod
    def example(operands: list[int], digits: int) -> Example:
        """The example of ``operands`` written with ``digits`` digits each."""
        return Example(
            prompt="+".join(f"{x:0{digits}d}" for x in operands) + "=",
            answer=str(sum(operands)),
            columns={
                "bucket": bucket(len(operands), digits),
                "n_operands": len(operands),
                "digits": digits,
                "carries": carries(operands),
            },
        )

    operands = staticmethod(Scratchpad.operands)

    def verify(self, completion: str, answer: str) -> bool:
        p = parse(completion)
        return p.well_formed and parse_int(p.answer) == int(answer)

    def spec(self) -> dict:
        """The arguments that differ from the defaults (JSON: cells as lists).

        >>> Graded(cells=[(2, 1), (5, 2)], n_train=100).spec()
        {'cells': [[2, 1], [5, 2]], 'n_train': 100}
        """
        given = {
            "cells": [list(c) for c in self.cells],
            "n_train": self.n_train,
            "n_heldout_per_cell": self.n_heldout_per_cell,
            "seed": self.seed,
        }
        default = {n: p.default for n, p in inspect.signature(Graded).parameters.items()}
        default["cells"] = [list(c) for c in default["cells"]]
        return {k: v for k, v in given.items() if v != default[k]}

    @property
    def max_completion_chars(self) -> int:
        """The longest correct completion with its ``MAX_RECHECKS`` longest steps re-checked
        (all operands 9...9 write the longest steps)."""
        out = 0
        for k, d in self.cells:
            nines, steps = [10**d - 1] * k, steps_of([10**d - 1] * k, d)
            extra = sorted(len(x) + 1 for x in steps)[-MAX_RECHECKS:]
            out = max(out, len(graded_target(nines, d)) + sum(extra))
        return out


def bucket_report(examples: list[Example], completions: list[str]) -> dict[str, dict]:
    """Per cell (by digits, then operands): ``n`` completions, ``pass_rate``, ``think_rate``,
    ``thought_len`` (mean characters inside ``<think>``, over completions that think; None when
    none does), ``recheck_rate`` (share of thoughts with a redundant step), and over the cell's
    distinct prompts the share that ``all_pass``, ``none_pass`` or ``some_pass`` (the spread of
    pass rates; ``some_pass`` needs several samples of a prompt).

    >>> ex = [Graded.example([3, 5], 1)] * 2 + [Graded.example([12, 34, 56], 2)]
    >>> r = bucket_report(ex, ["<answer>8</answer>", "<think>3+5=8 3+5=8</think><answer>8</answer>",
    ...                        "<answer>100</answer>"])
    >>> easy = r["2x1"]; easy["pass_rate"], easy["think_rate"], easy["recheck_rate"]
    (1.0, 0.5, 1.0)
    >>> r["3x2"]["pass_rate"], r["3x2"]["none_pass"]
    (0.0, 1.0)
    """
    rows = defaultdict(list)
    for e, c in zip(examples, completions, strict=True):
        rows[e.columns["bucket"]].append((e, c))
    by_digits = lambda b: tuple(int(x) for x in reversed(b.split("x")))  # (d, k)
    return {b: _cell_report(rows[b]) for b in sorted(rows, key=by_digits)}


def _cell_report(rows: list[tuple[Example, str]]) -> dict:
    passed = defaultdict(list)
    thoughts, rechecked = [], 0
    for e, c in rows:
        p = parse(c)
        passed[e.prompt].append(p.well_formed and parse_int(p.answer) == int(e.answer))
        if p.well_formed and p.think is not None:
            thoughts.append(p.think)
            ops = Scratchpad.operands(e.prompt)
            rechecked += any(s.redundant for s in graded_steps(c, ops, e.columns["digits"]))
    rates = [sum(v) / len(v) for v in passed.values()]
    share = lambda f: sum(map(f, rates)) / len(rates)
    return {
        "n": len(rows),
        "pass_rate": sum(sum(v) for v in passed.values()) / len(rows),
        "think_rate": len(thoughts) / len(rows),
        "thought_len": sum(map(len, thoughts)) / len(thoughts) if thoughts else None,
        "recheck_rate": rechecked / len(thoughts) if thoughts else None,
        "prompts": len(rates),
        "all_pass": share(lambda r: r == 1),
        "none_pass": share(lambda r: r == 0),
        "some_pass": share(lambda r: 0 < r < 1),
    }
