"""The built-in reward functions, in TRL's signature.

A reward function is ``fn(completions: list[str], **columns) -> list[float | None]``, exactly what
TRL's GRPOTrainer takes, so a reward written in a lab runs unchanged in TRL. ``columns`` holds the
dataset columns (``prompts``, ``answer``, ...); take what you need and swallow the rest with
``**kwargs``. ``None`` means "not applicable" (the function is skipped for that sample).

>>> exact_match(["42", "41"], answer=["42", "42"])
[1.0, 0.0]
"""

from __future__ import annotations

from labkit.rewards.reasoning import REASONING_REWARDS
from labkit.tasks.arithmetic import parse_int
from labkit.tasks.ramble import leading_int


def exact_match(completions: list[str], answer: list[str], **kwargs) -> list[float | None]:
    """1.0 when the completion states the reference integer, else 0.0 (the verifier's reward).

    >>> exact_match([" 7", "07", "x"], answer=["7", "7", "7"])
    [1.0, 1.0, 0.0]
    """
    gold = [parse_int(str(a)) for a in answer]  # a gold that does not parse: None (skipped)
    return [None if g is None else float(parse_int(c) == g) for c, g in zip(completions, gold)]


def digit_partial(completions: list[str], answer: list[str], **kwargs) -> list[float | None]:
    """Shaped accuracy: 1.0 when exact, else 0.5 x the fraction of answer digits right, counted
    from the right (units first), and 0 for a completion that is not a number.

    A denser signal than exact match for a small model (DESIGN.md: sparse exact-match reward
    learns slowly on the tiny policy).

    >>> digit_partial(["42", "52", "43", "x", "142"], answer=["42"] * 5)
    [1.0, 0.25, 0.0, 0.0, 0.0]
    """
    out = []
    for c, a in zip(completions, answer):
        c, a, gold = c.strip(), str(a), parse_int(str(a))
        if gold is None:  # a gold that does not parse: not applicable
            out.append(None)
        elif parse_int(c) is None:
            out.append(0.0)
        elif int(c) == gold:
            out.append(1.0)
        elif len(c) != len(a):
            out.append(0.0)
        else:
            right = 0
            for x, y in zip(reversed(c), reversed(a)):
                if x != y:
                    break
                right += 1
            out.append(0.5 * right / len(a))
    return out


def length_target(completions: list[str], target: int = 50, **kwargs) -> list[float]:
    """The seed's length reward (SmolLM2 demo): -|target - len(completion)| in characters.

    >>> length_target(["a" * 48, "a" * 50])
    [-2.0, -0.0]
    """
    return [-float(abs(target - len(c))) for c in completions]


def leading_match(completions: list[str], answer: list[str], **kwargs) -> list[float]:
    """1.0 when the integer before the first space is the answer (the rest is ignored), else
    0.0: the reward of the ``addition_ramble`` task, where length does not decide correctness.

    >>> leading_match(["42 17", "42", "421", "x 42"], answer=["42"] * 4)
    [1.0, 1.0, 0.0, 0.0]
    """
    return [float(leading_int(c) == int(a)) for c, a in zip(completions, answer)]


REWARDS = {
    "exact_match": exact_match,
    "digit_partial": digit_partial,
    "length_target": length_target,
    "leading_match": leading_match,
    **REASONING_REWARDS,
}  # answer_match, think_format, language_consistency
