"""Held-out evaluation: accuracy under greedy and sampled decoding."""

from __future__ import annotations

import torch

from labkit.rollout import rollout


@torch.no_grad()
def accuracy(model, tokenizer, task, examples=None, temperature: float = 1.0, samples: int = 1,
             max_completion_length: int | None = None, batch_size: int = 512, seed: int = 0,
             top_k: int = 0, top_p: float = 1.0) -> float:
    """Fraction of held-out completions the task's verifier accepts.

    ``temperature=0`` is greedy (one sample is enough); otherwise ``samples`` completions per
    prompt are drawn with a generator seeded by ``seed``, so the figure is reproducible.
    """
    examples = task.heldout if examples is None else examples
    max_len = max_completion_length or task.max_answer_chars + 1
    gen = torch.Generator().manual_seed(seed)
    reps = 1 if temperature == 0 else samples
    items = [e for e in examples for _ in range(reps)]
    hits = 0
    for i in range(0, len(items), batch_size):
        chunk = items[i:i + batch_size]
        b = rollout(model, tokenizer, [e.prompt for e in chunk], max_len, temperature, top_k,
                    top_p, generator=gen)
        hits += sum(task.verify(c, e.answer) for c, e in zip(b.completions, chunk))
    return hits / len(items)
