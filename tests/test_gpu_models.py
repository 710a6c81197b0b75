"""The model-side GPU path on CUDA: the lean decoder and its prefill against HF's forward, packed
rows ``[prompt | o_1 .. o_G]`` through CUDA's SDPA kernels against one forward per row, and
gradient checkpointing (same gradients, lower peak of CUDA memory).

The CPU versions are tests/test_decode.py, test_prefix.py and test_gradient_checkpointing.py,
whose helpers these reuse. Skipped without CUDA (the ``gpu`` marker, tests/conftest.py).
"""

from __future__ import annotations

import contextlib
import copy

import pytest
import torch
from test_decode import PROMPTS, both_decoders, encode
from test_gradient_checkpointing import loss_and_grads
from test_prefix import grouped_batch, plain_logits, shared

import labkit as lk
from labkit.experiments import gpu
from labkit.models import decode, prefix
from labkit.models.device import autocast
from labkit.models.policy import enable_gradient_checkpointing
from labkit.models.rollout import rollout

pytestmark = pytest.mark.gpu


def decoders_agree(model, ids, mask, tokens, record_property):
    hf, lean = both_decoders(model, ids, mask, tokens)
    record_property("max_abs_logit_diff", (lean - hf).abs().max().item())
    # CPU: 1.6e-5; an H200 (CUDA's fused attention and GEMM kernels): 1.3e-4 on 2 of 3465 logits
    atol = 1e-3 if lean.device.type == "cuda" else 1e-4
    torch.testing.assert_close(lean, hf, rtol=1e-5, atol=atol)


def test_lean_decoder_and_prefill_equal_hf_on_cuda(tiny, gpu_device, record_property):
    """The tiny policy (left padding, a repeated prompt run once by the prefill)."""
    model, tok = tiny
    model.to(gpu_device)
    assert decode.lean_ok(model)
    ids, mask = (x.to(gpu_device) for x in encode(tok, PROMPTS))
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(4, len(tok), (len(PROMPTS), 6), generator=g).to(gpu_device)
    decoders_agree(model, ids, mask, tokens, record_property)


def test_lean_decoder_equals_hf_on_smollm2s_architecture_on_cuda(gpu_device, record_property):
    """SmolLM2-135M's widths with random weights (2 of its 30 layers): grouped-query attention
    (9 query heads, 3 key/value), tied embeddings, RoPE base 1e5, a 49152-token vocabulary."""
    torch.manual_seed(0)
    model, _ = gpu.random_policy("smollm2-135m", device=gpu_device, num_hidden_layers=2)
    model.eval()
    assert decode.lean_ok(model)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(3, 49152, (3, 7), generator=g)
    mask = torch.ones_like(ids)
    mask[0, :3], ids[0, :3] = 0, 0  # left padding
    tokens = torch.randint(3, 49152, (3, 5), generator=g)
    dev = [x.to(gpu_device) for x in (ids, mask, tokens)]
    decoders_agree(model, *dev, record_property)


def test_sampling_on_cuda_takes_the_lean_decoder_and_greedy_matches_hf(
    tiny, gpu_device, monkeypatch
):
    model, tok = tiny
    model.to(gpu_device)
    calls = []
    step = decode.LlamaDecoder.__call__
    monkeypatch.setattr(
        decode.LlamaDecoder, "__call__", lambda self, *a: calls.append(1) or step(self, *a)
    )
    lean = rollout(model, tok, PROMPTS * 4, 6, temperature=0.0)
    assert calls and lean.completion_ids.device.type == gpu_device.type
    monkeypatch.setattr(decode, "lean_ok", lambda m: False)  # HF's forward for every step
    hf = rollout(model, tok, PROMPTS * 4, 6, temperature=0.0)
    assert lean.completions == hf.completions
    assert torch.equal(lean.completion_mask, hf.completion_mask)


def leaky_mask(prompt_mask, completion_mask):
    """A wrong packed mask: causal over the whole row, so o_j also sees o_1 .. o_{j-1}."""
    U, G, T = completion_mask.shape
    keys = torch.cat([prompt_mask, completion_mask.reshape(U, G * T)], 1).bool()  # [U, S]
    S, dev = keys.shape[1], keys.device
    causal = torch.ones(S, S, dtype=torch.bool, device=dev).tril()  # [S, S]
    eye = torch.eye(S, dtype=torch.bool, device=dev)
    return ((causal[None] & keys[:, None]) | eye)[:, None]  # [U, 1, S, S]


def packed_vs_plain(model, b):
    """Mean |log pi| difference over completion tokens: packed rows against plain rows."""
    with torch.no_grad():
        lp = [lk.token_logprobs(f(model, b), b.completion_ids) for f in (plain_logits, shared)]
    m = b.completion_mask
    return ((lp[0] - lp[1]).abs() * m).sum().item() / m.sum().item()


def sdpa_backend(name: str, device):
    if name == "default" or device.type != "cuda":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION)


TOLERANCE = {"fp32": 1e-5, "bf16": 2e-2}  # mean |dlogp|; CPU bf16 sampler vs trainer: 1.1e-3


@pytest.mark.parametrize("backend", ["default", "efficient"])
@pytest.mark.parametrize("precision", list(TOLERANCE))
def test_packed_rows_through_cuda_sdpa_equal_a_forward_per_row(
    tiny, gpu_device, precision, backend, monkeypatch, record_property
):
    """With a negative control: the same comparison under a mask that lets completions see
    each other must miss by far more than the tolerance, or the tolerance proves nothing."""
    model, tok = tiny
    model.to(gpu_device)
    b = grouped_batch(model, tok)
    answered = []
    packed = prefix.packed_outputs

    def spy(*args, **kwargs):
        out = packed(*args, **kwargs)
        answered.append(out is not None)
        return out

    monkeypatch.setattr(prefix, "packed_outputs", spy)
    with sdpa_backend(backend, gpu_device), autocast(gpu_device, precision):
        err = packed_vs_plain(model, b)
        monkeypatch.setattr(prefix, "packed_mask", leaky_mask)
        wrong = packed_vs_plain(model, b)
    record_property("mean_abs_dlogp", err)
    record_property("mean_abs_dlogp_wrong_mask", wrong)
    assert answered and all(answered)  # the packed forward did run
    assert err < TOLERANCE[precision] < wrong / 10, (err, wrong)


def test_packed_rows_give_a_forward_per_rows_gradients_on_cuda(tiny, gpu_device, record_property):
    model, tok = tiny
    model.to(gpu_device).train()
    b = grouped_batch(model, tok)
    grads = []
    for f in (plain_logits, shared):
        model.zero_grad()
        lp = lk.token_logprobs(f(model, b), b.completion_ids)  # [B, T]
        (lp * b.completion_mask).sum().backward()
        grads.append([p.grad.clone() for p in model.parameters()])
    flat = [torch.cat([g.flatten() for g in gs]) for gs in grads]
    rel = ((flat[0] - flat[1]).norm() / flat[0].norm()).item()
    record_property("rel_grad_diff", rel)
    record_property(
        "max_rel_grad_diff_per_param",
        max(((x - y).norm() / x.norm()).item() for x, y in zip(*grads)),
    )
    assert rel < 1e-4  # CPU fp32: 6.1e-6 overall, 5.8e-5 on the worst parameter


def test_gradient_checkpointing_on_cuda_same_grads_lower_peak(
    gpu_device, cuda_only, record_property
):
    model, tok = lk.load_policy("tiny")
    model.to(gpu_device)
    prompts = ["12+30=", "7+8=", "55+1=", "3+94=", "60+6=", "9+9=", "41+2=", "1+77="]
    gen = torch.Generator(gpu_device).manual_seed(0)
    r = rollout(model, tok, prompts, 4, generator=gen)
    plain = loss_and_grads(model, r)
    checked = loss_and_grads(enable_gradient_checkpointing(copy.deepcopy(model)), r)
    torch.testing.assert_close(checked[0], plain[0], atol=1e-5, rtol=1e-5)
    for a, b in zip(checked[1], plain[1]):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    cuda_only("torch.cuda.max_memory_allocated")
    ids = torch.randint(4, 90, (16, 512), device=gpu_device, generator=gen)  # [B, T]
    peaks = [peak_of_backward(model, ids, on) for on in (False, True)]
    record_property("peak_mib_without_with", [p / 2**20 for p in peaks])
    assert peaks[1] < 0.85 * peaks[0]  # CPU, 16 x 512: 368 -> 276 MiB


def peak_of_backward(model, ids, checkpointing: bool) -> int:
    """Peak CUDA bytes above what was allocated before, of one forward + backward."""
    m = copy.deepcopy(model).train()
    if checkpointing:
        enable_gradient_checkpointing(m)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    m(input_ids=ids).logits.float().logsumexp(-1).mean().backward()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - base
