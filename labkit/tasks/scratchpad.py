"""Adding five digits, with or without thinking: a scratchpad of running sums first.

``"3+5+8+2+7="`` -> ``"<think>3+5=8 8+8=16 16+2=18 18+7=25</think><answer>25</answer>"``. Each
step adds one digit to the running sum; the answer is then the last step's sum. A direct answer
(``"<answer>25</answer>"``) must add five digits in one forward pass. This is the
reasoning recipes' task (DeepSeek-R1, arXiv 2501.12948): RL should learn to think.

Two notations (the toy's "languages", for R1's language-consistency reward): ``digits``
(``16+2=18``) and ``letters`` (a=0 ... j=9: ``bg+c=bi``). A cold-start trace is written in one
of them or mixes them step by step, as R1-Zero's chains of thought mixed languages.

:func:`steps` checks every step against the prompt (the process labels of a PRM);
:func:`parse` splits a completion into its thought and its answer.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from labkit.tasks.arithmetic import parse_int
from labkit.tasks.base import Example, Task

LETTERS = "abcdefghij"  # the letters notation: a=0, b=1, ..., j=9
NOTATIONS = ("digits", "letters")
_FORMAT = re.compile(r"^(?:<think>(.*?)</think>)?<answer>(.*?)</answer>$", re.DOTALL)


def write_number(n: int, notation: str) -> str:
    """``n`` in a notation: ``write_number(12, "letters")`` -> ``"bc"``.

    >>> write_number(12, "digits"), write_number(12, "letters"), write_number(0, "letters")
    ('12', 'bc', 'a')
    """
    s = str(n)
    return s if notation == "digits" else "".join(LETTERS[int(c)] for c in s)


def chain(operands: list[int]) -> list[tuple[int, int, int]]:
    """(running sum, next operand, new sum) per step: the steps a correct scratchpad writes.

    >>> chain([3, 5, 8])
    [(3, 5, 8), (8, 8, 16)]
    """
    out, s = [], operands[0]
    for x in operands[1:]:
        out.append((s, x, s + x))
        s += x
    return out


def step_text(s: int, x: int, total: int, notation: str = "digits", digits: int = 1) -> str:
    """One step as written: ``step_text(16, 2, 18)`` -> ``"16+2=18"`` (operands zero-padded
    to ``digits``).

    >>> step_text(16, 2, 18), step_text(16, 2, 18, "letters"), step_text(4, 34, 38, digits=2)
    ('16+2=18', 'bg+c=bi', '04+34=38')
    """
    zero = "0" if notation == "digits" else "a"
    w = lambda v, pad: write_number(v, notation).rjust(pad, zero)
    return f"{w(s, digits)}+{w(x, digits)}={w(total, 1)}"


def trace(operands: list[int], notation: str | list[str] = "digits", digits: int = 1) -> str:
    """The scratchpad of ``sum(operands)``; ``notation`` is one name or one per step (mixed).

    >>> trace([3, 5, 8])
    '3+5=8 8+8=16'
    >>> trace([3, 5, 8], ["letters", "digits"])
    'd+f=i 8+8=16'
    """
    ch = chain(operands)
    notes = [notation] * len(ch) if isinstance(notation, str) else list(notation)
    return " ".join(step_text(s, x, t, n, digits) for (s, x, t), n in zip(ch, notes))


def target(
    operands: list[int], think: bool = True, notation: str | list[str] = "digits", digits: int = 1
) -> str:
    """A whole completion: ``<think>trace</think><answer>sum</answer>``, or the answer alone.

    >>> target([3, 5, 8]), target([3, 5, 8], think=False)
    ('<think>3+5=8 8+8=16</think><answer>16</answer>', '<answer>16</answer>')
    """
    thought = f"<think>{trace(operands, notation, digits)}</think>" if think else ""
    return f"{thought}<answer>{sum(operands)}</answer>"


@dataclass
class Parsed:
    """A completion split: ``well_formed`` when it is ``[<think>..</think>]<answer>..</answer>``."""

    well_formed: bool
    think: str | None  # the thought, None without <think> tags
    answer: str | None  # the text inside <answer>, None when not well formed


def parse(completion: str) -> Parsed:
    """Split a completion into thought and answer.

    >>> parse("<think>1+2=3</think><answer>3</answer>")
    Parsed(well_formed=True, think='1+2=3', answer='3')
    >>> parse("<answer>3</answer>").think, parse("3").well_formed
    (None, False)
    """
    m = _FORMAT.match(completion.strip())
    if m is None:
        return Parsed(False, None, None)
    return Parsed(True, m.group(1), m.group(2))


@dataclass
class Step:
    """One scratchpad step, checked against the prompt (a process label)."""

    text: str
    start: int  # character offset in the completion
    end: int
    correct: bool  # the step the true running sum asks for, in either notation
    notation: str | None  # "digits", "letters", "mixed" (inside one step) or None (unreadable)


def notation_of(text: str) -> str | None:
    """Which notation a piece of text uses: digits, letters, mixed, or None (neither)."""
    has_d, has_l = any(c.isdecimal() for c in text), any(c in LETTERS for c in text)
    return "mixed" if has_d and has_l else "digits" if has_d else "letters" if has_l else None


def steps(completion: str, operands: list[int], digits: int = 1) -> list[Step]:
    """The steps of a completion's thought (space-separated), each checked against step i of
    the true chain; steps past the last are wrong. No thought: no steps.

    >>> [s.correct for s in steps("<think>3+5=8 8+8=17</think><answer>17</answer>", [3, 5, 8])]
    [True, False]
    >>> [s.correct for s in steps("<think>d+f=i 8+8=16 16+1=17</think><answer>17</answer>",
    ...                            [3, 5, 8])]
    [True, True, False]
    """
    start, stop = completion.find("<think>"), completion.find("</think>")
    if start < 0 or stop < start:
        return []
    base = start + len("<think>")
    want = [{step_text(s, x, t, n, digits) for n in NOTATIONS} for s, x, t in chain(operands)]
    out, pos = [], base
    for i, text in enumerate(completion[base:stop].split(" ")):
        out.append(
            Step(text, pos, pos + len(text), i < len(want) and text in want[i], notation_of(text))
        )
        pos += len(text) + 1
    return out


class Scratchpad(Task):
    """The sum of ``n_operands`` numbers of ``digits`` digits, ``"3+5+8+2+7="``; the answer in
    ``<answer>`` tags, a thought before it optional. Train and held-out are disjoint seeded
    samples of all operand tuples.

    >>> t = Scratchpad(); len(t.train), len(t.heldout), t.train[0].prompt[-1]
    (20000, 1000, '=')
    >>> t.verify("<think>x</think><answer>25</answer>", "25"), t.verify("25", "25")
    (True, False)
    """

    name = "scratchpad"

    def __init__(
        self,
        n_operands: int = 5,
        digits: int = 1,
        n_train: int = 20000,
        n_heldout: int = 1000,
        seed: int = 0,
    ):
        if not 2 <= n_operands <= 5:
            raise ValueError(f"n_operands={n_operands}: use 2 to 5")
        if not 1 <= digits <= 3:
            raise ValueError(f"digits={digits}: use 1 to 3")
        n = 10 ** (digits * n_operands)
        if n_train + n_heldout > n:
            raise ValueError(
                f"n_train + n_heldout = {n_train + n_heldout} > {n} prompts: ask for fewer examples"
            )
        self.n_operands, self.digits = n_operands, digits
        codes = random.Random(seed).sample(range(n), n_train + n_heldout)
        examples = [self.example(self.split_code(c)) for c in codes]
        self.heldout, self.train = examples[:n_heldout], examples[n_heldout:]

    def split_code(self, code: int) -> list[int]:
        m = 10**self.digits
        return [code // m**i % m for i in range(self.n_operands)]

    def example(self, operands: list[int]) -> Example:
        return Example(
            prompt="+".join(f"{x:0{self.digits}d}" for x in operands) + "=",
            answer=str(sum(operands)),
        )

    @staticmethod
    def operands(prompt: str) -> list[int]:
        """``"3+5+8+2+7="`` -> [3, 5, 8, 2, 7]."""
        return [int(x) for x in prompt.rstrip("=").split("+")]

    def verify(self, completion: str, answer: str) -> bool:
        p = parse(completion)
        return p.well_formed and parse_int(p.answer) == int(answer)

    @property
    def max_completion_chars(self) -> int:
        """An upper bound on a well-formed thought-then-answer completion's length."""
        k, d = self.n_operands, self.digits
        step = 2 * (d + 1) + 1 + d + 1  # "s+x=t", s and t up to d + 1 digits
        return len("<think></think><answer></answer>") + (k - 1) * (step + 1) + d + 1
