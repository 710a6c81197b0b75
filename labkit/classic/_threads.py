"""One torch thread for the tiny tensors of the classic labs."""

from __future__ import annotations

import contextlib
import functools

import torch


def one_thread(fn):
    """Run ``fn`` with torch on one thread, then restore the count.

    The networks here are a few thousand parameters: with 2+ threads on a busy CPU, thread
    synchronisation costs more than the arithmetic (measured 10-20x slower under load).
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with _threads(1):
            return fn(*args, **kwargs)

    return wrapper


@contextlib.contextmanager
def _threads(n: int):
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)
