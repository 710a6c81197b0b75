"""Memory that fits: the chunked selective log-softmax equals the plain one, the estimate is
printed before training on a GPU, and an out-of-memory step raises a clear error.
Peak memory on a 150k vocabulary: ``python benchmarks/logsoftmax_memory.py``."""

from __future__ import annotations

import pytest
import torch
from trl.trainer.utils import selective_log_softmax

import labkit as lk
import labkit.core.logprobs as logprobs_module
from labkit.core.logprobs import token_logprobs
from labkit.models.memory import GB, estimate_memory, memory_report


def plain(logits, ids, tau=1.0):
    return (logits.float() / tau).log_softmax(-1).gather(-1, ids[..., None]).squeeze(-1)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("tau", [1.0, 0.7])
def test_chunked_logsoftmax_equals_plain_and_trl(monkeypatch, tau, dtype):
    """float64: equal to 1e-6 absolute (measured ~1e-14); float32: to 1e-6 relative (log-probs
    near -20 have an fp32 spacing of 2e-6, so no fp32 method agrees to 1e-6 absolute there)."""
    monkeypatch.setattr(logprobs_module, "CHUNK_ELEMENTS", 3 * 1000)  # 3 rows per chunk
    torch.manual_seed(0)
    logits = (5 * torch.randn(3, 7, 1000, dtype=dtype)).requires_grad_(True)  # 7 chunks
    ids = torch.randint(0, 1000, (3, 7))
    w = torch.randn(3, 7, dtype=dtype)
    ours = token_logprobs(logits, ids, tau)
    ref = (logits / tau).log_softmax(-1).gather(-1, ids[..., None]).squeeze(-1)
    trl = selective_log_softmax(logits, ids, tau)
    tol = 1e-6 if dtype == torch.float64 else 1e-6 * ref.detach().abs()
    assert ((ours - ref).abs() <= tol).all() and ((ours - trl).abs() <= tol).all()
    (g_ours,) = torch.autograd.grad((ours * w).sum(), logits)
    (g_ref,) = torch.autograd.grad((ref * w).sum(), logits)
    assert torch.allclose(g_ours, g_ref, rtol=1e-6, atol=1e-6)
    if dtype == torch.float32:  # bf16 logits: fp32 log-probs, bf16 gradient
        lo = logits.detach().bfloat16().requires_grad_(True)
        out = token_logprobs(lo, ids, tau)
        assert out.dtype == torch.float32
        assert ((out - plain(lo, ids, tau)).abs() <= 1e-6 * out.detach().abs()).all()
        out.sum().backward()
        assert lo.grad.dtype == torch.bfloat16


def test_gradcheck_in_float64():
    z = torch.randn(2, 3, 11, dtype=torch.float64, requires_grad=True)
    ids = torch.randint(0, 11, (2, 3))
    assert torch.autograd.gradcheck(lambda x: token_logprobs(x, ids, 0.8), (z,))


def test_estimate_grows_with_the_batch_and_names_the_fix():
    tr = lk.GRPOTrainer("tiny", max_steps=1, save_steps=0)
    small = estimate_memory(tr.model, 8, 32)["total"]
    assert estimate_memory(tr.model, 64, 32)["total"] > small > 0
    msg = memory_report(tr)
    assert "this config needs ~" in msg and "GB free" in msg
    huge = lk.GRPOTrainer(
        "tiny",
        max_steps=1,
        save_steps=0,
        prompts_per_step=4096,
        num_generations=64,
        max_completion_length=4096,
    )
    assert "try:" in memory_report(huge) and estimate_memory(huge.model, 1, 1)["total"] < GB


def test_out_of_memory_becomes_a_clear_error(monkeypatch):
    tr = lk.GRPOTrainer("tiny", max_steps=1, save_steps=0)

    def boom():
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")

    monkeypatch.setattr(tr, "train_step", boom)
    with pytest.raises(MemoryError, match="this config needs ~.* GB"):
        tr.step()
