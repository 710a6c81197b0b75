"""Markdown made from stored results: the README's claims table and each lab's "measured"
section. ``scripts/results_tables.py`` writes them; ``tests/test_results_tables.py`` fails when
the README or a lab disagrees with the stored results.

>>> fmt(0.123456), fmt(-0.0001234), fmt(12.5), fmt(float("nan"))
('0.123', '-0.000123', '12.5', '–')
"""

from __future__ import annotations

import math

import pandas as pd
from scipy import stats

from labkit.experiments.harness import Result

MARK = "<!-- measured: {} -->"
"""The first line of a lab's generated markdown cell."""


def fmt(x: float) -> str:
    """Three significant digits (a dash for NaN)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return f"{x:.3g}"


def cell(text: str) -> str:
    r"""``text`` safe in a markdown table cell: its pipes escaped (a metric such as ``|Q - Q*|``
    would otherwise split the cell).

    >>> print(cell("|Q - Q*| (mean)"))
    \|Q - Q*\| (mean)
    """
    return str(text).replace("|", "\\|")


def interval_text(mean: float, low: float, high: float) -> str:
    """``0.052 [0.011, 0.093]``."""
    return f"{fmt(mean)} [{fmt(low)}, {fmt(high)}]"


def claims_rows(result: Result, lab: str) -> list[str]:
    """One README row per claim of ``result``; the lab column names the stored result too (a lab
    may test one claim on two set-ups, e.g. lab 92's ``kimi_length`` and ``kimi_recheck``)."""
    rows = []
    for v in result.verdicts():
        c = v.claim
        rows.append(
            f"| {cell(c.text)} | {cell(c.source)} | {lab.split('_')[0]} `{result.name}` | {v.n} | "
            f"{interval_text(v.mean, v.low, v.high)} | {cell(c.rule)} | **{v.verdict}** |"
        )
    return rows


def claims_table(results: dict[str, tuple[Result, str]]) -> str:
    """The README's table: ``results`` maps a name to (stored result, its lab)."""
    head = [
        (
            "| claim | source | lab, result | seeds | effect [95 % CI] | rule (stated before the run) "
            "| verdict |"
        ),
        "|---|---|---|---|---|---|---|",
    ]
    body = [row for result, lab in results.values() for row in claims_rows(result, lab)]
    return "\n".join(head + body)


WIDE = 30
"""Summaries with more columns than this are tabled one metric a row, one arm a column."""


def arm_table(result: Result) -> str:
    """Per arm, each summary column's mean ± the half-width of its 95 % t interval (arms as
    rows; as columns when there are more than ``WIDE`` summary columns)."""
    s = result.summaries
    cols = [c for c in s.columns if c not in ("arm", "seed")]
    groups = list(s.groupby("arm", sort=False))
    values = {arm: [mean_pm(d[c].dropna()) for c in cols] for arm, d in groups}
    if len(cols) > WIDE:
        head = "| metric | " + " | ".join(f"{cell(a)} ({len(d)} seeds)" for a, d in groups) + " |"
        rows = [
            f"| {cell(c)} | " + " | ".join(values[a][i] for a, _ in groups) + " |"
            for i, c in enumerate(cols)
        ]
        return "\n".join([head, "|---" * (len(groups) + 1) + "|", *rows])
    lines = [
        "| arm | seeds | " + " | ".join(map(cell, cols)) + " |",
        "|---" * (len(cols) + 2) + "|",
    ]
    for arm, d in groups:
        lines.append(f"| {cell(arm)} | {len(d)} | " + " | ".join(values[arm]) + " |")
    return "\n".join(lines)


def mean_pm(v: pd.Series) -> str:
    """``mean ± half-width`` of the 95 % t interval (the mean alone for one value)."""
    half = stats.sem(v) * stats.t.ppf(0.975, len(v) - 1) if len(v) > 1 else float("nan")
    return fmt(v.mean()) + ("" if math.isnan(half) else f" ± {fmt(half)}")


def time_text(meta: dict) -> str:
    """How long a stored result took: ``wall_s``, the wall time of the call that stored it, and
    (results stored since the harness keeps it) ``runs_s``, its runs' own seconds summed, with
    how many runs that call read back from an earlier one instead of running them.

    >>> time_text({"wall_s": 12.0})
    '12.0 s'
    >>> meta = {"wall_s": 0.1, "runs_s": 1020.4, "runs_read_back": 5, "arms": ["A"]}
    >>> meta["seeds"] = [0, 1, 2, 3, 4]
    >>> time_text(meta)
    '0.1 s wall clock (5 of 5 runs read back from an earlier call), runs 1020.4 s summed'
    >>> time_text(meta | {"wall_s": 530.2, "runs_read_back": 0})
    '530.2 s wall clock, runs 1020.4 s summed'
    """
    wall = f"{meta.get('wall_s', '?')} s"
    if "runs_s" not in meta:
        return wall  # stored before the harness kept the runs' own time
    n = len(meta.get("seeds", [])) * len(meta.get("arms", [])) or "?"
    back = meta.get("runs_read_back", 0)
    read = f" ({back} of {n} runs read back from an earlier call)" if back else ""
    runs = "?" if meta["runs_s"] is None else meta["runs_s"]
    return f"{wall} wall clock{read}, runs {runs} s summed"


def measured_section(result: Result) -> str:
    """A lab's generated "measured" cell: how the stored result was made, the per-arm table
    and the claims with their intervals and verdicts."""
    m = result.meta
    verdicts = pd.DataFrame([v.row() for v in result.verdicts()])
    claims = [
        f"- {r['claim']}: {interval_text(r['effect'], r['ci_low'], r['ci_high'])} "
        f"over {r['seeds']} seeds; rule: {r['rule']}: **{r['verdict']}**"
        for r in verdicts.to_dict("records")
    ]
    return "\n".join(
        [
            MARK.format(result.name),
            "## Full mode, measured",
            "",
            (
                f"`{m.get('command', '?')}`: {len(m.get('seeds', []))} seeds x "
                f"{len(m.get('arms', []))} arms x {m.get('steps', '?')} steps, labkit "
                f"{m.get('commit', '?')}, torch {m.get('versions', {}).get('torch', '?')}, "
                f"{m.get('date', '?')}, {m.get('cores', '?')} cores, {time_text(m)}. "
                "Means over seeds ± the half-width of their 95 % confidence interval "
                "(generated from the stored result by `scripts/results_tables.py`)."
            ),
            "",
            arm_table(result),
            "",
            *claims,
        ]
    )
