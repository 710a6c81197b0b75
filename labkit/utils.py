"""Small helpers shared by notebooks and the package: fast mode, seeding, showing source."""

from __future__ import annotations

import inspect
import os
import random


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
