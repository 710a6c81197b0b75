"""The files of labkit that one GRPO step runs, in the order it first enters them.

    python scripts/step_path.py [--demo]

The count is what ARCHITECTURE.md's "one GRPO step, file by file" quotes: a reader following
the step from ``Trainer.step`` to the optimizer step and the run log opens these files. The
default configuration (``GRPOTrainer()``), or the demo's (``--demo``: ``skip_zero_advantage``).
Package ``__init__`` files and the first-step-only imports are left out.
"""

from __future__ import annotations

import pathlib
import sys

import labkit as lk
from labkit.algos.config import DEMO_DEFAULTS

ROOT = pathlib.Path(lk.__file__).parent


def step_files(trainer) -> list[str]:
    """labkit's files entered by ``trainer.step()`` (after one warm-up step), in order."""
    trainer.step()  # imports and caches settle
    seen: dict[str, None] = {}

    def trace(frame, event, arg):
        path = pathlib.Path(frame.f_code.co_filename)
        if event == "call" and ROOT in path.parents and path.name != "__init__.py":
            seen.setdefault(str(path.relative_to(ROOT.parent)), None)

    sys.settrace(trace)
    try:
        trainer.step()
    finally:
        sys.settrace(None)
    return list(seen)


def main() -> None:
    demo = "--demo" in sys.argv
    kw = {**DEMO_DEFAULTS, "max_steps": 2, "save_steps": 0} if demo else {"save_steps": 0}
    files = step_files(lk.GRPOTrainer(**kw))
    for i, f in enumerate(files, 1):
        print(f"{i:3d} {f}")


if __name__ == "__main__":
    main()
