"""HTML tables of completions: the dashboard's latest group, the reward editor's best and worst.

Plain HTML strings (for ``ipywidgets.HTML``), every cell escaped; ``lk-table`` classes for the
browser test.
"""

from __future__ import annotations

import html
import math


def examples_html(bank, result: dict, k: int = 3) -> str:
    """Best and worst ``k`` completions of a ``Bank`` by reward, with their advantage."""
    r, adv = result["rewards"], result["advantages"]
    order = sorted(range(len(r)), key=lambda i: r[i])
    prompts = bank.columns.get("prompts", [""] * len(r))

    def rows(idx):
        return "".join(
            f"<tr><td>{html.escape(str(prompts[i]))}</td>"
            f"<td>{html.escape(repr(bank.completions[i]))}</td>"
            f"<td>{r[i]:+.3f}</td><td>{adv[i]:+.3f}</td></tr>"
            for i in idx
        )

    head = "<tr><th>prompt</th><th>completion</th><th>reward</th><th>advantage</th></tr>"
    return (
        f"<b>best</b><table class='lk-table lk-best'>{head}{rows(order[::-1][:k])}</table>"
        f"<b>worst</b><table class='lk-table lk-worst'>{head}{rows(order[:k])}</table>"
    )


def samples_html(rows: list[dict], reward_cols: list[str]) -> str:
    """An HTML table of completions: prompt, completion, each reward, total, advantage, correct."""
    head = [
        "prompt",
        "completion",
        *[c.split("/", 1)[1] for c in reward_cols],
        "reward",
        "advantage",
        "correct",
    ]
    body = []
    for r in rows:
        cells = [
            r["prompt"],
            repr(r["completion"]),
            *[_fmt(r.get(c)) for c in reward_cols],
            _fmt(r["reward"]),
            _fmt(r["advantage"]),
            "✓" if r.get("correct") else "✗",
        ]
        body.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    return (
        "<table class='lk-table'><tr>"
        + "".join(f"<th>{h}</th>" for h in head)
        + "</tr>"
        + "".join(body)
        + "</table>"
    )


def _fmt(v) -> str:
    return (
        "–"
        if v is None or (isinstance(v, float) and math.isnan(v))
        else f"{v:+.3f}"
        if isinstance(v, float)
        else str(v)
    )
