"""How far apart are the sampler's and the trainer's log-probs, per precision?

The sampler decodes token by token with a KV cache; the trainer runs one full forward over
prompt + completion. In fp32 both give the same numbers to rounding; under bf16 or fp16
autocast the two computations round differently, so pi_sample != pi_train for the same
weights, and the "on-policy" ratio pi_theta / pi_old is already off 1 before any update.
TRL corrects the same mismatch (vLLM sampler vs trainer) with truncated importance sampling:
weight each token by min(pi_train / pi_sample, C) (Yao et al. 2025, "Your efficient RL
framework secretly brings you off-policy RL training"; TRL's ``vllm_importance_sampling_*``).

Measured here on the CPU (autocast runs bf16 and fp16 there too), per precision:
``|dlogp|`` = mean over completion tokens of |log pi_sample - log pi_train| (same precision),
``|dlogp| vs fp32`` = the trainer's low-precision log-probs against an fp32 full forward.
"""

from __future__ import annotations

import pandas as pd
import torch

from labkit.core.logprobs import masked_mean
from labkit.models.device import autocast
from labkit.models.policy import load_policy
from labkit.models.rollout import completion_logprobs, rollout
from labkit.tasks import get_task

CLAIM = ("The sampler's log-probs differ from the trainer's for the same weights (Yao et al. 2025, "
         "fengyao.notion.site/off-policy-rl; TRL's truncated importance sampling), and low "
         "precision is one cause: its error grows as the mantissa shrinks (bf16: 8 bits, "
         "fp16: 11, fp32: 24).")
PRECISIONS = ("fp32", "fp16", "bf16")


@torch.no_grad()
def logprob_mismatch(model, tokenizer, prompts: list[str], precision: str, max_len: int,
                     seed: int = 0) -> dict:
    """Sample under ``precision`` (cached decoding), then compare its log-probs of the sampled
    tokens with a full forward in the same precision and in fp32 (:data:`CLAIM`)."""
    dev = next(model.parameters()).device
    gen = torch.Generator(dev).manual_seed(seed)
    with autocast(dev, precision):
        r = rollout(model, tokenizer, prompts, max_len, 1.0, generator=gen)
        train = completion_logprobs(model, r)  # [B, T]
    full32 = completion_logprobs(model, r)  # [B, T]
    mask = r.completion_mask
    d = (r.sample_logp - train).abs()  # [B, T]
    ratio = (train - r.sample_logp).exp()  # [B, T] pi_train / pi_sample
    stats = torch.stack([masked_mean(d, mask), (d * mask).max(),
                         masked_mean((train - full32).abs(), mask),
                         masked_mean((ratio - 1).abs(), mask)]).tolist()  # one sync
    return {"precision": precision, "|dlogp|": stats[0], "max |dlogp|": stats[1],
            "|dlogp| vs fp32": stats[2], "|ratio - 1|": stats[3], "tokens": int(mask.sum())}


def run(fast: bool = True, seed: int = 0) -> pd.DataFrame:
    """The mismatch table for fp32, fp16 and bf16 on the tiny policy's held-out prompts."""
    model, tok = load_policy("tiny")
    task = get_task("addition")
    prompts = [e.prompt for e in task.heldout[:64 if fast else 512] for _ in range(4)]
    return pd.DataFrame([logprob_mismatch(model, tok, prompts, p, task.max_answer_chars + 1, seed)
                         for p in PRECISIONS])


def verdict(table: pd.DataFrame) -> str:
    """Two findings from the numbers: does cached low-precision sampling disagree with the
    full forward in the same precision (> 1e-5 mean |dlogp|)? Does low precision move the
    log-probs from fp32, fp16 (11-bit mantissa) less than bf16 (8 bits)?"""
    t = table.set_index("precision")
    d, v = t["|dlogp|"], t["|dlogp| vs fp32"]
    same = max(d["fp16"], d["bf16"]) > 1e-5
    order = 1e-5 < v["fp16"] < v["bf16"]
    head = ("reproduced" if same and order else "not reproduced" if not order else
            "reproduced in part")
    return (f"{head}: sampler vs trainer in the same precision |dlogp| fp32 {d['fp32']:.1e}, "
            f"fp16 {d['fp16']:.1e}, bf16 {d['bf16']:.1e}"
            f"{'' if same else ' (same kernels on the CPU: rounding only)'}; "
            f"low precision vs fp32 fp16 {v['fp16']:.1e} < bf16 {v['bf16']:.1e}: "
            f"{'as the mantissa predicts' if order else 'NOT in the mantissa order'}")
