"""The checked call every trainer makes: one finite number (or None) per completion, or one
error naming the function and the fix (the run log so far is kept). The function is called as
TRL calls it, every argument by keyword (:func:`labkit.rewards.kwargs.bind`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from labkit.rewards.builtin import REWARDS
from labkit.rewards.kwargs import bind, missing

RewardFn = Callable[..., list]


class RewardError(ValueError):
    """A reward function failed or returned something unusable; names the function and the fix."""


def reward_name(fn: RewardFn) -> str:
    return getattr(fn, "__name__", type(fn).__name__)


def get_reward(fn: RewardFn | str) -> RewardFn:
    """A reward function, or the name of a built-in one (see ``REWARDS``)."""
    if callable(fn):
        return fn
    if fn not in REWARDS:
        raise ValueError(
            f"unknown reward {fn!r}: pass a function "
            f"fn(completions, **columns) -> list[float] or one of {sorted(REWARDS)}"
        )
    return REWARDS[fn]


def call_reward(fn: RewardFn, completions: Sequence, columns: dict) -> list[float]:
    """Call ``fn`` (``completions`` and ``columns`` by keyword, as TRL does) and check what it
    returns: one finite number (or None -> NaN) per completion.

    Raises :class:`RewardError` naming the function, what was wrong and how to fix it.

    >>> call_reward(lambda completions, **kw: [1.0], ["a", "b"], {})
    Traceback (most recent call last):
    ...
    labkit.rewards.call.RewardError: reward function '<lambda>' returned 1 values for 2 completions: return one number (or None) per completion
    """
    name = reward_name(fn)
    args, kwargs = bind(fn, list(completions), columns)
    need = missing(fn, args, kwargs)
    if need:
        raise RewardError(
            f"reward function {name!r} needs {', '.join(map(repr, need))}, which the data does "
            f"not have (it is passed {sorted(kwargs)}): add that column to the dataset (TRL "
            "passes every column by name), or give the parameter a default"
        )
    try:
        values = fn(*args, **kwargs)
    except Exception as e:  # a user's code: report it, never crash the run log
        raise RewardError(
            f"reward function {name!r} raised {type(e).__name__}: {e}. "
            "Fix the function; the run log so far is kept."
        ) from e
    return check_values(name, values, completions)


def check_values(name: str, values, completions: Sequence) -> list[float]:
    """``values`` as one finite float (None -> NaN) per completion, or a :class:`RewardError`
    naming the function ``name`` and the fix.

    >>> check_values("f", [1, None], ["a", "b"])
    [1.0, nan]
    """
    try:
        values = list(values)
    except TypeError:
        raise RewardError(
            f"reward function {name!r} returned {type(values).__name__}, not a "
            "list: return one number (or None) per completion"
        ) from None
    if len(values) != len(completions):
        raise RewardError(
            f"reward function {name!r} returned {len(values)} values for "
            f"{len(completions)} completions: return one number (or None) per "
            "completion"
        )
    out = []
    for i, v in enumerate(values):
        if v is None:
            out.append(math.nan)
            continue
        if not isinstance(v, (int, float)) and not hasattr(v, "__float__"):  # bools count as 0/1
            raise RewardError(
                f"reward function {name!r} returned {v!r} "
                f"({type(v).__name__}) for completion {i}: return a float or None"
            )
        if not math.isfinite(float(v)):
            raise RewardError(
                f"reward function {name!r} returned {float(v)} for completion {i}"
                f" ({completions[i]!r}): return a finite float, or None to skip"
            )
        out.append(float(v))
    return out
