"""Held-out evaluation: accuracy under greedy and sampled decoding, pass@k and maj@k."""

from __future__ import annotations

from collections import Counter

import torch

from labkit.models.rollout import rollout


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
    gen = torch.Generator(next(model.parameters()).device).manual_seed(seed)
    reps = 1 if temperature == 0 else samples
    items = [e for e in examples for _ in range(reps)]
    hits = 0
    for i in range(0, len(items), batch_size):
        chunk = items[i:i + batch_size]
        b = rollout(model, tokenizer, [e.prompt for e in chunk], max_len, temperature, top_k,
                    top_p, generator=gen)
        hits += sum(task.verify(c, e.answer) for c, e in zip(b.completions, chunk))
    return hits / len(items)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from n samples of which c are correct: 1 - C(n-c, k) / C(n, k).

    Chen et al. 2021 (2107.03374), eq. 1; computed as a stable product.

    >>> pass_at_k(4, 1, 1), pass_at_k(4, 1, 4), pass_at_k(4, 0, 2)
    (0.25, 1.0, 0.0)
    """
    if not 1 <= k <= n:
        raise ValueError(f"k={k}: use 1 <= k <= n={n}")
    if n - c < k:
        return 1.0
    miss = 1.0
    for i in range(n - c + 1, n + 1):
        miss *= 1.0 - k / i
    return 1.0 - miss


def majority_correct(completions: list[str], answer: str, task) -> bool:
    """maj@k for one prompt: the most frequent answer (stripped text; ties: the first seen).

    >>> from labkit.tasks import get_task
    >>> majority_correct(["42", " 41", "41", "42", "42"], "42", get_task("addition"))
    True
    """
    votes = Counter(c.strip() for c in completions)
    return task.verify(votes.most_common(1)[0][0], answer)


@torch.no_grad()
def pass_and_majority(model, tokenizer, task, examples=None, n: int = 8, ks=(1, 4, 8),
                      temperature: float = 1.0, seed: int = 0, top_k: int = 0, top_p: float = 1.0,
                      batch_size: int = 512) -> dict:
    """``{"pass@k": ..., "maj@k": ...}`` over held-out prompts from ``n`` samples each.

    pass@k is the unbiased estimator (:func:`pass_at_k`); maj@k votes over the first k samples.
    """
    examples = task.heldout if examples is None else examples
    gen = torch.Generator(next(model.parameters()).device).manual_seed(seed)
    items = [e for e in examples for _ in range(n)]
    texts = []
    for i in range(0, len(items), batch_size):
        chunk = items[i:i + batch_size]
        texts += rollout(model, tokenizer, [e.prompt for e in chunk], task.max_answer_chars + 1,
                         temperature, top_k, top_p, generator=gen).completions
    out = {f"pass@{k}": 0.0 for k in ks} | {f"maj@{k}": 0.0 for k in ks}
    for j, e in enumerate(examples):
        outs = texts[j * n:(j + 1) * n]
        c = sum(task.verify(t, e.answer) for t in outs)
        for k in ks:
            out[f"pass@{k}"] += pass_at_k(n, c, k) / len(examples)
            out[f"maj@{k}"] += majority_correct(outs[:k], e.answer, task) / len(examples)
    return out
