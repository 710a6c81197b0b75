"""Exercise checker for the labs: ``lk.testing.check("name", answer)`` prints pass or fail.

Each exercise is a function registered under a name; it receives the student's answer (a value
or a function), compares it with labkit's own implementation on fixed or random inputs, and
raises AssertionError with a message saying what differed. ``check`` turns that into one clear
line and returns True or False, so a notebook cell never crashes on a wrong answer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

_EXERCISES: dict[str, Callable[[Any], None]] = {}


def exercise(name: str):
    """Register ``fn(answer)`` as the checker of exercise ``name`` (raises AssertionError)."""

    def register(fn):
        _EXERCISES[name] = fn
        return fn

    return register


def exercises() -> list[str]:
    """Names of every registered exercise (the classic labs' register when ``labkit.classic``
    is imported, as ``import labkit`` does)."""
    return sorted(_EXERCISES)


def check(name: str, answer: Any) -> bool:
    """Check ``answer`` for exercise ``name``; print one line; return True when it passes.

    >>> @exercise("doc_two")
    ... def _(answer): assert_close(answer, 2.0, "1 + 1")
    >>> check("doc_two", 2.0)
    ✅ doc_two: correct
    True
    >>> check("doc_two", 3.0)
    ❌ doc_two: 1 + 1: expected 2.0, got 3.0
    False
    """
    if name not in _EXERCISES:
        raise ValueError(f"unknown exercise {name!r}; known: {', '.join(sorted(_EXERCISES))}")
    try:
        _EXERCISES[name](answer)
    except AssertionError as e:
        print(f"❌ {name}: {e}")
        return False
    except Exception as e:  # noqa: BLE001  (a student's code crashed: say so, don't raise)
        print(f"❌ {name}: your answer raised {type(e).__name__}: {e}")
        return False
    print(f"✅ {name}: correct")
    return True


def assert_close(got: Any, expected: Any, what: str, atol: float = 1e-6) -> None:
    """Raise AssertionError("<what>: expected ..., got ...") unless got ~= expected."""
    g = np.asarray(got.detach() if hasattr(got, "detach") else got, dtype=float)
    e = np.asarray(expected.detach() if hasattr(expected, "detach") else expected, dtype=float)
    if g.shape != e.shape:
        raise AssertionError(f"{what}: expected shape {e.shape}, got {g.shape}")
    if not np.allclose(g, e, atol=atol, rtol=0):
        raise AssertionError(
            f"{what}: expected {np.round(e, 4).tolist()}, got {np.round(g, 4).tolist()}"
        )
