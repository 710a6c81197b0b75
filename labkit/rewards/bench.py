"""The reward test bench: run a reward function on an adversarial suite and flag what a reviewer
would (``lk.reward_bench(fn, task="addition")``).

For a few of the task's examples the suite writes the gold answer, then variants a reviewer
would call harmless (whitespace, newlines around it), garbage (empty, whitespace only, a wrong
answer, two answers at once, the answer only inside ``<think>``, the answer duplicated, an
unclosed tag, a huge completion) and cases that are only reported (full-width and superscript
digits, end-of-sequence text, ``1,000`` / ``1e3`` / ``01`` / ``-0`` forms), plus a gold answer
that does not parse and a missing column. Each case is one call through the reward runtime
(time-limited). The flags:

- ``crash``: the function raised (a missing column is expected to: reported, not flagged);
- ``non-number``: it returned something that is not one finite number per completion;
- ``garbage rewarded``: a garbage case scored as high as the gold answer;
- ``variant not rewarded``: a harmless variant scored below the gold answer;
- ``slow``: one call took more than ``slow`` seconds.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import pandas as pd

from labkit.rewards.call import RewardError, reward_name
from labkit.rewards.runtime import RewardRunner

HARMLESS = {"space before": " {a}", "newline after": "{a}\n", "padded": "\n  {a} \n"}
GARBAGE = {
    "empty": "",
    "whitespace": " \n\t ",
    "wrong answer": "{w}",
    "two answers": "{a} {w}",
    "only in think": "<think>{a}</think>",
    "duplicated": "{a}{a}",
    "unclosed tag": "<answer>{a}",
    "huge": "{a}" + "9" * 20000,
}
REPORTED = {
    "full-width digits": "{fw}",
    "superscript digits": "{sup}",
    "eos text": "{a}</s>",
    "thousands comma": "{comma}",
    "scientific": "{sci}",
    "leading zero": "0{a}",
    "minus zero": "-0",
}


@dataclass
class BenchResult:
    """The bench's table (one row per case) and its flags; ``ok`` when nothing is flagged."""

    name: str
    table: pd.DataFrame

    @property
    def flags(self) -> pd.DataFrame:
        return self.table[self.table["flag"] != ""]

    @property
    def ok(self) -> bool:
        return self.flags.empty

    def __repr__(self) -> str:
        counts = self.flags["flag"].value_counts().to_dict()
        return f"reward_bench({self.name}): " + ("no flag" if self.ok else str(counts))

    def _repr_html_(self) -> str:
        return f"<b>{self!r}</b>" + self.table.to_html(index=False)


def _forms(a: str, w: str) -> dict:
    n = int(a)
    return {
        "a": a,
        "w": w,
        "fw": a.translate(str.maketrans("0123456789", "０１２３４５６７８９")),
        "sup": a.translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")),
        "comma": f"{n * 1000:,}",
        "sci": f"{n}e0",
    }


def adversarial_cases(task="addition", n_examples: int = 3, seed: int = 0) -> list[dict]:
    """The suite: dicts with ``case``, ``kind`` (gold/harmless/garbage/reported/column),
    ``completion`` and ``columns`` (one example each).

    >>> cases = adversarial_cases(n_examples=1)
    >>> [c["kind"] for c in cases][:3], cases[0]["completion"] == cases[0]["columns"]["answer"][0]
    (['gold', 'harmless', 'harmless'], True)
    """
    from labkit.tasks import get_task

    task = get_task(task) if isinstance(task, str) else task
    out = []
    for ex in task.sample_prompts(n_examples, random.Random(seed)):
        cols = task.columns([ex])
        a, w = str(ex.answer), str(int(ex.answer) + 1)
        f = _forms(a, w)
        out.append({"case": "gold", "kind": "gold", "completion": a, "columns": cols})
        for kind, table in (("harmless", HARMLESS), ("garbage", GARBAGE), ("reported", REPORTED)):
            out += [
                {"case": k, "kind": kind, "completion": t.format(**f), "columns": cols}
                for k, t in table.items()
            ]
        out.append(
            {
                "case": "gold does not parse",
                "kind": "reported",
                "completion": a,
                "columns": {**cols, "answer": ["n/a"]},
            }
        )
        out.append(
            {
                "case": "missing column",
                "kind": "column",
                "completion": a,
                "columns": {"prompts": cols["prompts"]},
            }
        )
    return out


def _flag(kind: str, value, gold, error: str, latency: float, slow: float) -> str:
    if error:
        if kind == "column":
            return ""
        return "non-number" if " raised " not in error else "crash"
    if latency > slow:
        return "slow"
    if gold is None or value is None:
        return ""
    if kind == "garbage" and value >= gold:
        return "garbage rewarded"
    if kind == "harmless" and value < gold:
        return "variant not rewarded"
    return ""


def reward_bench(
    fn,
    task="addition",
    cases: list[dict] | None = None,
    n_examples: int = 3,
    timeout: float = 5.0,
    slow: float = 0.1,
    seed: int = 0,
) -> BenchResult:
    """``fn`` on :func:`adversarial_cases` plus ``cases`` (dicts with ``completion``, ``kind``
    and optionally ``case`` and ``columns``); one row per case, flagged as the module says.

    >>> from labkit.rewards.builtin import exact_match
    >>> reward_bench(exact_match, n_examples=1)
    reward_bench(exact_match): no flag
    """
    suite = adversarial_cases(task, n_examples, seed)
    default_cols = suite[0]["columns"]
    suite += [
        {"case": c.get("case", "user case"), "columns": c.get("columns", default_cols), **c}
        for c in (cases or [])
    ]
    runner = RewardRunner(timeout=timeout, on_error="raise")
    rows, gold = [], None
    try:
        for c in suite:
            error = ""
            try:
                res = runner(fn, [c["completion"]], c["columns"])
                value, latency = res.values[0], res.latency
            except RewardError as e:
                value, latency, error = None, 0.0, str(e)
            value = None if value is None or math.isnan(value) else value  # None: NaN
            if c["kind"] == "gold":
                gold = value
            rows.append(
                {
                    "case": c["case"],
                    "kind": c["kind"],
                    "completion": c["completion"][:40],
                    "reward": value,
                    "gold reward": gold,
                    "latency_ms": round(1e3 * latency, 3),
                    "flag": _flag(c["kind"], value, gold, error, latency, slow),
                    "error": error[:160],
                }
            )
    finally:
        runner.close()
    return BenchResult(reward_name(fn), pd.DataFrame(rows))


# -- buggy references: each has one bug the bench must flag (tests/test_rewards_bench.py) -----
def strict_equal(completions, answer, **kwargs):
    """Bug: compares raw text, so " 42" and "42\\n" (harmless variants) score 0."""
    return [float(c == str(a)) for c, a in zip(completions, answer)]


def contains_answer(completions, answer, **kwargs):
    """Bug: the answer anywhere in the text counts, so "42 43" and "<think>42</think>" win."""
    return [float(str(a) in c) for c, a in zip(completions, answer)]


def int_cast(completions, answer, **kwargs):
    """Bug: ``int(c)`` on any text: an empty or non-numeric completion crashes the run."""
    return [float(int(c) == int(a)) for c, a in zip(completions, answer)]


def yes_no(completions, answer, **kwargs):
    """Bug: returns the strings "yes"/"no" instead of numbers."""
    return ["yes" if c.strip() == str(a) else "no" for c, a in zip(completions, answer)]


def slow_exact(completions, answer, **kwargs):
    """Bug: a blocking call per completion (0.2 s): a whole batch of 128 takes 26 s."""
    import time

    time.sleep(0.2 * len(completions))
    return [float(c.strip() == str(a)) for c, a in zip(completions, answer)]


BUGGY = {
    strict_equal: "variant not rewarded",
    contains_answer: "garbage rewarded",
    int_cast: "crash",
    yes_no: "non-number",
    slow_exact: "slow",
}
"""Each buggy reference and the flag the bench must give it."""
