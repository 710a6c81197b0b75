"""A calculator tool for arithmetic the tiny policy cannot do in its head.

Prompts come in three levels of difficulty (:class:`CalcTask`):

- ``easy``: 1-digit addition ``"3+4="`` (the cold start answers it in its head);
- ``medium``: 2-digit addition ``"07+35="`` (the ``tiny`` policy's own task, ~40 % sampled);
- ``hard``: 2-digit multiplication ``"37*48="`` (out of reach of a 0.9 M-parameter char model).

The policy may answer directly (``"1776"``) or call the tool (``"[37*48="``), read its answer
(``"1776]"``, written by the environment) and stop, which submits the tool's answer (or write
an answer of its own after it). :func:`tool_reward`
pays 1 for the right final answer and charges ``TOOL_COST`` per call, so a call is worth it
only where the policy's own answer is unreliable: RL should learn *when* to call.
"""

from __future__ import annotations

import random
import re

from labkit.envs.base import BracketProtocol
from labkit.tasks.arithmetic import parse_int
from labkit.tasks.base import Example, Task

TOOL_COST = 0.3
"""Reward charged per tool call by :func:`tool_reward` (a call must earn its keep)."""
LEVELS = ("easy", "medium", "hard")
_EXPR = re.compile(r"\d{1,4}([+*-]\d{1,4}){1,3}")


class Calculator:
    """The environment: one tool, ``calc``. No state beyond a call count; no ``get_reward``
    (the answer is in the completion, scored by :func:`tool_reward`)."""

    def __init__(self):
        self.reset()

    def reset(self, **columns) -> str | None:
        """Start an episode (TRL passes the dataset row's columns); no observation."""
        self.calls = 0
        return None

    def calc(self, expression: str) -> str:
        """Evaluate an integer expression of up to four numbers (at most 4 digits each) joined
        by +, - or *, e.g. "37*48".

        Args:
            expression: the expression, digits and + - * only.
        """
        self.calls += 1
        if not _EXPR.fullmatch(expression):
            raise ValueError(f"not an expression of + - * on integers: {expression!r}")
        return str(eval(expression, {"__builtins__": {}}))  # digits and + - * only (checked)


def level(prompt: str) -> str:
    """The difficulty of a :class:`CalcTask` prompt.

    >>> level("3+4="), level("07+35="), level("37*48=")
    ('easy', 'medium', 'hard')
    """
    return "hard" if "*" in prompt else ("easy" if len(prompt) == 4 else "medium")


class CalcTask(Task):
    """Easy, medium and hard prompts in equal shares; a seeded fraction of each held out.

    >>> t = CalcTask(); sorted({level(e.prompt) for e in t.train})
    ['easy', 'hard', 'medium']
    >>> t.verify("[37*48=1776]", "1776"), t.verify("[37*48=1776]1775", "1776")
    (True, False)
    """

    name = "calculator"
    protocol = BracketProtocol()

    def __init__(self, per_level: int = 2000, heldout_fraction: float = 0.2, seed: int = 0):
        rng = random.Random(seed)
        easy = [Example(f"{a}+{b}=", str(a + b)) for a in range(10) for b in range(10)]
        medium = [Example(f"{a:02d}+{b:02d}=", str(a + b)) for a in range(100) for b in range(100)]
        hard = [Example(f"{a}*{b}=", str(a * b)) for a in range(10, 100) for b in range(10, 100)]
        self.train, self.heldout = [], []
        for pool in (easy, medium, hard):
            rng.shuffle(pool)
            k = max(1, int(min(per_level, len(pool)) * heldout_fraction))
            self.heldout += pool[:k]
            self.train += pool[k:per_level]
        self.by_level = {lv: [e for e in self.train if level(e.prompt) == lv] for lv in LEVELS}

    def verify(self, completion: str, answer: str) -> bool:
        return parse_int(self.protocol.answer(completion)) == int(answer)

    def sample_prompts(self, n: int, rng: random.Random) -> list[Example]:
        """``n`` prompts, each level equally likely."""
        return [rng.choice(self.by_level[rng.choice(LEVELS)]) for _ in range(n)]

    @property
    def max_answer_chars(self) -> int:
        return 13  # "[37*48=1776]" + eos


def tool_reward(completions: list[str], answer: list[str], **kwargs) -> list[float]:
    """r = 1[final answer correct] - TOOL_COST x (tool calls), TRL's reward signature; the
    final answer is ``BracketProtocol.answer`` (the tool's when the policy stops after it).

    >>> tool_reward(["7", "[3+4=7]", "[37*48=1776]1775", "1776"], answer=["7", "7", "1776", "9"])
    [1.0, 0.7, -0.3, 0.0]
    """
    p = CalcTask.protocol
    return [
        float(parse_int(p.answer(c)) == int(a)) - TOOL_COST * c.count(p.close)
        for c, a in zip(completions, answer)
    ]


def calc_traces(task: CalcTask, n: int, tool_frac: float, seed: int) -> list[tuple[str, str]]:
    """Cold-start (prompt, target) pairs: a fraction ``tool_frac`` call the tool and stop (the
    tool's answer is submitted), the rest answer directly (the right answer; on hard prompts
    one the model cannot learn). Targets include the tool's answer, masked in the SFT loss
    (scripts/make_tools_checkpoint.py).

    >>> calc_traces(CalcTask(), 2, 1.0, 0)[0][1].count("[")
    1
    """
    rng = random.Random(seed)
    pairs = []
    for e in task.sample_prompts(n, rng):
        direct = rng.random() >= tool_frac
        pairs.append((e.prompt, e.answer if direct else f"[{e.prompt}{e.answer}]"))
    return pairs
