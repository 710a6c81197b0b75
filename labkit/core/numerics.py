"""Two numerical rules every function of ``labkit.core`` follows.

1. One compute dtype: at least float32 (bool, int, fp16 and bf16 are lifted, so a bf16 model's
   log-probs are not summed or exponentiated in 8 bits of mantissa), float64 kept when any input
   is float64 (checks and exact-gradient tests run in float64).
2. Masks select, they never multiply: padding positions may hold -inf or NaN log-probs (a real
   run produces them), and NaN * 0 = NaN, so ``x * mask`` would leak them into every sum.
   ``where_valid`` replaces them by 0 instead; applied to an *input* it also keeps the gradient
   finite (where's backward sends 0, not 0 * NaN, to the masked entries).

Masks are 0/1 (bool, int or float): a position is valid where ``mask != 0``.
"""

from __future__ import annotations

import torch


def float_dtype(*xs: torch.Tensor | float | None) -> torch.dtype:
    """The dtype to compute in: float32 at least, float64 if any tensor is float64 (others skipped).

    >>> float_dtype(torch.zeros(1, dtype=torch.bfloat16)), float_dtype(torch.zeros(1).double())
    (torch.float32, torch.float64)
    """
    dtype = torch.float32
    for x in xs:
        if isinstance(x, torch.Tensor):
            dtype = torch.promote_types(dtype, x.dtype)
    return dtype


def where_valid(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """x where mask != 0, exactly 0 elsewhere, whatever x holds there (NaN, inf).

    Equal to ``x * mask`` for a 0/1 mask and finite x (up to the sign of zero).

    >>> where_valid(torch.tensor([1.0, float("nan"), -float("inf")]), torch.tensor([1, 0, 0]))
    tensor([1., 0., 0.])
    """
    return torch.where(mask != 0, x, 0.0)
