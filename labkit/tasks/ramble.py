"""Addition graded on the first word: ``"07+35="`` -> ``"42 1739"`` is right, whatever follows.

Why this task exists: Dr. GRPO's length bias (Liu et al. 2025, 2503.20783) is about responses
whose length does not decide the reward. On :class:`~labkit.tasks.arithmetic.Addition` a
completion is the bare integer, so any extra character makes it wrong and RL simply learns to
stop; length cannot drift for a reason other than correctness. Here the answer is the leading
integer and anything after a space is free "scratch work" (the ``tiny-babble`` policy,
``scripts/make_babble_checkpoint.py``, sometimes writes some), so only the loss's length
normalisation can push lengths up or down.
"""

from __future__ import annotations

from labkit.tasks.arithmetic import Addition, parse_int


def leading_int(text: str) -> int | None:
    """The integer before the first space, or None: ``"42 17"`` -> 42, ``"4x 1"`` -> None.

    >>> leading_int("42 1739"), leading_int(" 7"), leading_int("42"), leading_int("x 42")
    (42, 7, 42, None)
    """
    words = text.split()
    return parse_int(words[0]) if words else None


class AdditionRamble(Addition):
    """2-digit addition; the verifier reads the leading integer and ignores the rest.

    >>> t = AdditionRamble(); t.verify("42 999", "42"), t.verify("429", "42"), t.name
    (True, False, 'addition_ramble')
    """

    name = "addition_ramble"

    def verify(self, completion: str, answer: str) -> bool:
        return leading_int(completion) == int(answer)
