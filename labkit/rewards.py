"""Reward functions in TRL's signature, and the safe call the trainer makes.

A reward function is ``fn(completions: list[str], **columns) -> list[float | None]``, exactly what
TRL's GRPOTrainer takes, so a reward written in a lab runs unchanged in TRL. ``columns`` holds the
dataset columns (``prompts``, ``answer``, ...); take what you need and swallow the rest with
``**kwargs``. ``None`` means "not applicable" (the function is skipped for that sample).

>>> exact_match(["42", "41"], answer=["42", "42"])
[1.0, 0.0]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from labkit.tasks.arithmetic import parse_int

RewardFn = Callable[..., list]


class RewardError(ValueError):
    """A reward function failed or returned something unusable; names the function and the fix."""


def exact_match(completions: list[str], answer: list[str], **kwargs) -> list[float]:
    """1.0 when the completion states the reference integer, else 0.0 (the verifier's reward).

    >>> exact_match([" 7", "07", "x"], answer=["7", "7", "7"])
    [1.0, 1.0, 0.0]
    """
    return [float(parse_int(c) == int(a)) for c, a in zip(completions, answer)]


def digit_partial(completions: list[str], answer: list[str], **kwargs) -> list[float]:
    """Shaped accuracy: 1.0 when exact, else 0.5 x the fraction of answer digits right, counted
    from the right (units first), and 0 for a completion that is not a number.

    A denser signal than exact match for a small model (DESIGN.md: sparse exact-match reward
    learns slowly on the tiny policy).

    >>> digit_partial(["42", "52", "43", "x", "142"], answer=["42"] * 5)
    [1.0, 0.25, 0.0, 0.0, 0.0]
    """
    out = []
    for c, a in zip(completions, answer):
        c = c.strip()
        if not c.isdigit():
            out.append(0.0)
        elif int(c) == int(a):
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


REWARDS = {"exact_match": exact_match, "digit_partial": digit_partial,
           "length_target": length_target}


def reward_name(fn: RewardFn) -> str:
    return getattr(fn, "__name__", type(fn).__name__)


def get_reward(fn: RewardFn | str) -> RewardFn:
    """A reward function, or the name of a built-in one (see ``REWARDS``)."""
    if callable(fn):
        return fn
    if fn not in REWARDS:
        raise ValueError(f"unknown reward {fn!r}: pass a function "
                         f"fn(completions, **columns) -> list[float] or one of {sorted(REWARDS)}")
    return REWARDS[fn]


def call_reward(fn: RewardFn, completions: Sequence[str], columns: dict) -> list[float]:
    """Call ``fn`` and check what it returns: one finite number (or None -> NaN) per completion.

    Raises :class:`RewardError` naming the function, what was wrong and how to fix it.

    >>> call_reward(lambda completions, **kw: [1.0], ["a", "b"], {})
    Traceback (most recent call last):
    ...
    labkit.rewards.RewardError: reward function '<lambda>' returned 1 values for 2 completions: return one number (or None) per completion
    """
    name = reward_name(fn)
    try:
        values = fn(list(completions), **columns)
    except Exception as e:  # a user's code: report it, never crash the run log
        raise RewardError(f"reward function {name!r} raised {type(e).__name__}: {e}. "
                          "Fix the function; the run log so far is kept.") from e
    try:
        values = list(values)
    except TypeError:
        raise RewardError(f"reward function {name!r} returned {type(values).__name__}, not a "
                          "list: return one number (or None) per completion") from None
    if len(values) != len(completions):
        raise RewardError(f"reward function {name!r} returned {len(values)} values for "
                          f"{len(completions)} completions: return one number (or None) per "
                          "completion")
    out = []
    for i, v in enumerate(values):
        if v is None:
            out.append(math.nan)
            continue
        if not isinstance(v, (int, float)) and not hasattr(v, "__float__"):  # bools count as 0/1
            raise RewardError(f"reward function {name!r} returned {v!r} "
                              f"({type(v).__name__}) for completion {i}: return a float or None")
        if not math.isfinite(float(v)):
            raise RewardError(f"reward function {name!r} returned {float(v)} for completion {i}"
                              f" ({completions[i]!r}): return a finite float, or None to skip")
        out.append(float(v))
    return out
