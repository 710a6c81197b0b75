"""Small helpers shared by notebooks and the package: fast mode, seeding, showing source."""

from __future__ import annotations

import html
import inspect
import os
import pathlib
import random
import sys
import textwrap


def fast_mode() -> bool:
    """True when ``LABKIT_FAST`` is set to a non-empty, non-zero value (CI runs labs this way).

    >>> import os; saved = os.environ.pop("LABKIT_FAST", None)
    >>> os.environ["LABKIT_FAST"] = "1"; fast_mode()
    True
    >>> os.environ["LABKIT_FAST"] = "0"; fast_mode()
    False
    >>> _ = os.environ.pop("LABKIT_FAST")
    >>> if saved is not None: os.environ["LABKIT_FAST"] = saved
    """
    return os.environ.get("LABKIT_FAST", "") not in ("", "0", "false", "False")


def pick(full, fast):
    """``fast`` in fast mode (CI, quick demos), ``full`` otherwise: ``steps = lk.pick(300, 20)``."""
    return fast if fast_mode() else full


def set_seed(seed: int) -> None:
    """Seed Python, NumPy (when installed) and torch in one call."""
    import torch

    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy as np

        np.random.seed(seed % 2**32)
    except ImportError:  # numpy is optional for the math
        pass


def show_source(obj) -> None:
    """Print the source of a labkit function or class, so notebooks show code without pasting it."""
    try:
        from IPython.display import Code, display

        display(Code(inspect.getsource(obj), language="python"))
    except ImportError:
        print(inspect.getsource(obj))


def excerpt(obj, first: str, last: str | None = None) -> str:
    """The lines of ``obj``'s source from the one holding ``first`` to the one holding ``last``,
    dedented, under a comment that says where they are (package-relative file and lines): how a
    lab quotes a library's lines beside labkit's.

    >>> print(excerpt(fast_mode, "return os.environ"))  # doctest: +ELLIPSIS
    # labkit.utils.fast_mode, labkit/utils.py:...
    return os.environ.get("LABKIT_FAST", "") not in ("", "0", "false", "False")
    """
    lines, start = inspect.getsourcelines(obj)
    at = []
    for marker in (first, last or first):
        hits = [k for k, line in enumerate(lines) if marker in line]
        if len(hits) != 1:
            raise ValueError(f"{obj.__qualname__}: {marker!r} is on {len(hits)} lines, not 1")
        at.append(hits[0])
    root = pathlib.Path(sys.modules[obj.__module__.split(".")[0]].__file__).parent.parent
    path = pathlib.Path(inspect.getsourcefile(obj)).resolve().relative_to(root.resolve())
    where = (
        f"# {obj.__module__}.{obj.__qualname__}, {path.as_posix()}:{start + at[0]}-{start + at[1]}"
    )
    return where + "\n" + textwrap.dedent("".join(lines[at[0] : at[1] + 1])).rstrip("\n")


def show_beside(left: str, right: str) -> None:
    """Two code excerpts side by side in a notebook (one after the other elsewhere)."""
    try:
        from IPython.display import HTML, display
    except ImportError:
        print(left, right, sep="\n\n")
        return
    pre = '<pre style="flex: 1; min-width: 0; overflow-x: auto; font-size: 11px">{}</pre>'
    cols = "".join(pre.format(html.escape(code)) for code in (left, right))
    display(HTML(f'<div style="display: flex; gap: 1em">{cols}</div>'))
