"""Addition of two n-digit numbers: ``"07+35="`` -> ``"42"``.

Operands are zero-padded to a fixed width, so every prompt has the same length (no padding
inside a batch for the tiny model); the answer is the plain integer followed by end-of-sequence.
"""

from __future__ import annotations

import random

from labkit.tasks.base import Example, Task


def parse_int(text: str) -> int | None:
    """The integer a completion states, or None: ``" 42"`` -> 42, ``"4x"`` -> None.

    >>> parse_int("42"), parse_int(" 7 "), parse_int("4x"), parse_int(""), parse_int("4²")
    (42, 7, None, None, None)
    """
    text = text.strip()
    # isdecimal, not isdigit: "²".isdigit() is True but int("²") raises; int() also refuses
    # strings over 4300 digits (a huge completion). Both crashed the reward (the reward bench).
    return int(text) if text.isdecimal() and len(text) <= 4300 else None


class Addition(Task):
    """All pairs (a, b) with ``digits`` digits each; a fixed seeded fraction is held out.

    >>> t = Addition(); len(t.train) + len(t.heldout), t.heldout_fraction
    (10000, 0.2)
    >>> t.verify("42", "42"), t.verify("042", "42"), t.verify("41", "42")
    (True, True, False)
    """

    name = "addition"

    def __init__(self, digits: int = 2, heldout_fraction: float = 0.2, seed: int = 0):
        if not 1 <= digits <= 6:
            raise ValueError(f"digits={digits}: use 1 to 6")
        if not 0.0 < heldout_fraction < 1.0:
            raise ValueError(f"heldout_fraction={heldout_fraction}: use a value in (0, 1)")
        self.digits, self.heldout_fraction = digits, heldout_fraction
        n = 10**digits
        examples = [self.example(a, b) for a in range(n) for b in range(n)]
        random.Random(seed).shuffle(examples)
        k = int(len(examples) * heldout_fraction)
        self.heldout, self.train = examples[:k], examples[k:]

    def example(self, a: int, b: int) -> Example:
        return Example(prompt=f"{a:0{self.digits}d}+{b:0{self.digits}d}=", answer=str(a + b))

    def verify(self, completion: str, answer: str) -> bool:
        return parse_int(completion) == int(answer)

    @property
    def max_answer_chars(self) -> int:
        return self.digits + 1
