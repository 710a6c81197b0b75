"""Packed rows ``[prompt | o_1 .. o_G]`` against the gathered KV cache (``labkit.models.prefix``).

For the tiny policy, 8 distinct prompts x G completions of T tokens: milliseconds of one
training forward + backward through each path (median of interleaved repeats, one run), and
the ratio packed / cache. ``PACK_MAX`` (the longest packed row, P + G x T tokens) is set from
this table: packing pays while the ratio is below 1.

    .venv/bin/python benchmarks/prefix_packing.py
"""

import statistics
import time

import torch

import labkit as lk
from labkit.models import prefix


def batch(model, tok, G: int, T: int, seed: int = 0):
    """8 held-out prompts x G sampled completions of up to T tokens (random tokens past eos)."""
    prompts = [e.prompt for e in lk.get_task("addition").heldout[:8] for _ in range(G)]
    enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(4, len(tok), (len(prompts), T), generator=g)  # [B, T]
    return enc["input_ids"], enc["attention_mask"], ids, torch.ones_like(ids)


def fwd_bwd(model, b, pack_max: int) -> float:
    prefix.PACK_MAX = pack_max
    t0 = time.perf_counter()
    logits = prefix.completion_logits(model, *b)  # [B, T, V]
    lk.token_logprobs(logits, b[2]).sum().backward()
    model.zero_grad(set_to_none=True)
    return time.perf_counter() - t0


def main(repeats: int = 20) -> None:
    model, tok = lk.load_policy("tiny")
    default = prefix.PACK_MAX
    print(f"torch threads {torch.get_num_threads()}; PACK_MAX = {default}")
    print("G   T  S=P+GT  cache_ms  packed_ms  packed/cache")
    for G in (4, 8, 16):
        for T in (4, 16, 32, 72):
            b = batch(model, tok, G, T)
            times = {"cache": [], "packed": []}
            for _ in range(repeats):
                times["cache"].append(fwd_bwd(model, b, 0))
                times["packed"].append(fwd_bwd(model, b, 10**9))
            c, p = (1000 * statistics.median(times[k][3:]) for k in ("cache", "packed"))
            S = b[0].shape[1] + G * T
            print(f"{G:<3d} {T:<3d} {S:6d}  {c:8.1f}  {p:9.1f}  {p / c:12.2f}", flush=True)
    prefix.PACK_MAX = default


if __name__ == "__main__":
    main()
