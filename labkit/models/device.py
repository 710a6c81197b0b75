"""Where a run trains and in what precision: chosen by the hardware, overridable.

``resolve_device("auto")``: cuda, then mps, then cpu. ``choose_precision(device, "auto")``: bf16
autocast on compute capability >= 8.0 (A100, L4, H100: bf16 tensor cores), fp16 autocast with a
gradient scaler on 7.x (T4, V100), fp32 on the CPU and MPS. Not
``torch.cuda.is_bf16_supported()``: it counts emulation and answers True on a T4 (capability
7.5), where bf16 runs without tensor cores (unslothai/unsloth #2783, huggingface/trl #2906).
Log-probs for the loss are computed in fp32 whatever the precision (``labkit.core.logprobs``).
"""

from __future__ import annotations

import contextlib

import torch

from labkit.core.options import PRECISIONS, choose

AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def resolve_device(device=None, model=None) -> torch.device:
    """``"auto"``: cuda if available, then mps, then cpu; ``None``: where ``model`` is (cpu
    without one); anything else: ``torch.device(device)``.

    >>> resolve_device("cpu"), resolve_device(None)
    (device(type='cpu'), device(type='cpu'))
    """
    if device is None:
        return next(model.parameters()).device if model is not None else torch.device("cpu")
    if device == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        mps = getattr(torch.backends, "mps", None)
        return torch.device("mps" if mps is not None and mps.is_available() else "cpu")
    return torch.device(device)


def choose_precision(device, precision: str = "auto") -> str:
    """``"bf16"``, ``"fp16"`` or ``"fp32"`` for training on ``device``.

    ``"auto"``: on cuda by compute capability (>= 8.0: bf16; 7.x: fp16 + a gradient scaler;
    older: fp32), fp32 elsewhere. An explicit ``"fp32"``/``"bf16"``/``"fp16"`` is kept (CPU
    autocast runs both half types, slowly: for tests and for measuring their error).

    >>> choose_precision("cpu"), choose_precision("cpu", "bf16")
    ('fp32', 'bf16')
    """
    choose("precision", precision, PRECISIONS)
    if precision != "auto":
        return precision
    device = torch.device(device)
    if device.type != "cuda":
        return "fp32"
    major, _ = torch.cuda.get_device_capability(device)
    return "bf16" if major >= 8 else "fp16" if major == 7 else "fp32"


def autocast(device, precision: str):
    """The autocast context of a resolved ``precision`` on ``device`` (a no-op for fp32)."""
    if precision == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(torch.device(device).type, dtype=AUTOCAST_DTYPES[precision])


def grad_scaler(device, precision: str):
    """A ``torch.amp.GradScaler`` for fp16 (its gradients underflow without one), else None."""
    if precision != "fp16":
        return None
    return torch.amp.GradScaler(torch.device(device).type)
