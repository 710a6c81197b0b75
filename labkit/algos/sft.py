"""Supervised fine-tuning (the cold start of the R1 recipe): teach the format, then do RL.

Cross-entropy on the completion tokens only (the prompt is context, not a target).
"""

from __future__ import annotations

import random
from collections.abc import Callable

import torch
from tqdm.auto import tqdm

from labkit.core.logprobs import masked_mean
from labkit.models.rollout import Batch, completion_logprobs


def sft_batch(tokenizer, pairs: list[tuple[str, str]]) -> Batch:
    """Prompts left-padded, targets (+ eos) right-padded, as a rollout would have produced."""
    enc = tokenizer([p for p, _ in pairs], return_tensors="pt", padding=True,
                    add_special_tokens=False)
    targets = [t + [tokenizer.eos_token_id] for t in  # one batched call: fast tokenizers
               tokenizer([t for _, t in pairs], add_special_tokens=False)["input_ids"]]
    T = max(map(len, targets))
    ids = torch.full((len(pairs), T), tokenizer.pad_token_id)  # [B, T]
    mask = torch.zeros(len(pairs), T, dtype=torch.long)  # [B, T]
    for i, t in enumerate(targets):
        ids[i, :len(t)], mask[i, :len(t)] = torch.tensor(t), 1
    return Batch(enc["input_ids"], enc["attention_mask"], ids, mask,
                 torch.zeros(len(pairs), dtype=torch.bool), [p for p, _ in pairs],
                 [t for _, t in pairs])


def sft(model, tokenizer, pairs: list[tuple[str, str]], steps: int, batch_size: int = 128,
        learning_rate: float = 3e-3, seed: int = 0, stop: Callable[[int], bool] | None = None,
        eval_every: int = 50, progress: bool = True) -> list[float]:
    """Train on (prompt, target) pairs for ``steps`` steps; ``stop(step)`` may end it early.

    Returns the loss of every step. The learning rate warms up over 20 steps, then stays.
    """
    rng = random.Random(seed)
    torch.manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 20))
    losses = []
    bar = tqdm(range(steps), desc="cold-start SFT", disable=not progress)
    model.train()
    for step in bar:
        batch = sft_batch(tokenizer, [rng.choice(pairs) for _ in range(batch_size)])
        loss = -masked_mean(completion_logprobs(model, batch), batch.completion_mask)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
        bar.set_postfix(loss=f"{losses[-1]:.3f}")
        if stop is not None and (step + 1) % eval_every == 0 and stop(step + 1):
            break
    return losses
