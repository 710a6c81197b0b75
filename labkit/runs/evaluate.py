"""Held-out evaluation: one probe (sampled completions and their verdicts), accuracy under
greedy and sampled decoding, pass@k and maj@k."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import torch
from tqdm.auto import tqdm

from labkit.models.rollout import rollout
from labkit.tasks.base import Example, max_completion_tokens


@dataclass
class Probe:
    """What :func:`probe` drew: each prompt's ``samples`` completions in a row, the verifier's
    verdicts and the lengths in tokens (eos included)."""

    examples: list[Example]  # [P * samples]: each example repeated ``samples`` times
    completions: list[str]
    correct: list[bool]
    lengths: list[int]

    @property
    def accuracy(self) -> float:
        """The fraction of completions the verifier accepts."""
        return sum(self.correct) / max(1, len(self.correct))

    def by_prompt(self, samples: int) -> list[list[str]]:
        """The completions as [P][samples]."""
        c = self.completions
        return [c[i : i + samples] for i in range(0, len(c), samples)]


@torch.no_grad()
def probe(
    model,
    tokenizer,
    task,
    n: int | None = None,
    examples=None,
    samples: int = 1,
    temperature: float = 1.0,
    max_completion_length: int | None = None,
    seed: int = 0,
    top_k: int = 0,
    top_p: float = 1.0,
    batch_size: int | None = 512,
    progress: bool = False,
) -> Probe:
    """``samples`` completions of each of the first ``n`` held-out prompts (all: None), or of
    ``examples``, verified by the task: a seeded, reproducible probe of the policy.

    One generator on the model's device, seeded by ``seed``, draws every batch of
    ``batch_size`` completions in turn (None: one batch); completions are up to
    ``max_completion_length`` tokens (None: what the task declares,
    :func:`~labkit.tasks.base.max_completion_tokens`). ``temperature=0`` is greedy;
    ``progress`` shows a bar over the batches.

    >>> from labkit import load_policy
    >>> from labkit.tasks import get_task
    >>> p = probe(*load_policy("tiny"), get_task("addition"), n=4, samples=2)
    >>> len(p.completions), len(p.by_prompt(2)), 0 <= p.accuracy <= 1
    (8, 4, True)
    """
    if examples is None:
        examples = task.heldout if n is None else task.heldout[:n]
    max_len = max_completion_tokens(task, max_completion_length)
    gen = torch.Generator(next(model.parameters()).device).manual_seed(seed)
    items = [e for e in examples for _ in range(samples)]
    step = batch_size or max(1, len(items))
    texts, lengths = [], []
    for i in tqdm(range(0, len(items), step), desc="sampling", disable=not progress):
        b = rollout(
            model,
            tokenizer,
            [e.prompt for e in items[i : i + step]],
            max_len,
            temperature=temperature,
            top_k=top_k,
            top_p=top_p,
            generator=gen,
        )
        texts += b.completions
        lengths += b.lengths.tolist()
    correct = [bool(task.verify(c, e.answer)) for c, e in zip(texts, items)]
    return Probe(items, texts, correct, lengths)


def accuracy(
    model,
    tokenizer,
    task,
    examples=None,
    temperature: float = 1.0,
    samples: int = 1,
    max_completion_length: int | None = None,
    batch_size: int = 512,
    seed: int = 0,
    top_k: int = 0,
    top_p: float = 1.0,
) -> float:
    """Fraction of held-out completions the task's verifier accepts (a :func:`probe`).

    ``temperature=0`` is greedy (one sample is enough); otherwise ``samples`` completions per
    prompt are drawn with a generator seeded by ``seed``, so the figure is reproducible.
    """
    return probe(
        model,
        tokenizer,
        task,
        examples=examples,
        samples=1 if temperature == 0 else samples,
        temperature=temperature,
        max_completion_length=max_completion_length,
        seed=seed,
        top_k=top_k,
        top_p=top_p,
        batch_size=batch_size,
    ).accuracy


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
def pass_and_majority(
    model,
    tokenizer,
    task,
    examples=None,
    n: int = 8,
    ks=(1, 4, 8),
    temperature: float = 1.0,
    seed: int = 0,
    top_k: int = 0,
    top_p: float = 1.0,
    batch_size: int = 512,
) -> dict:
    """``{"pass@k": ..., "maj@k": ...}`` over held-out prompts from ``n`` samples each.

    pass@k is the unbiased estimator (:func:`pass_at_k`); maj@k votes over the first k samples.
    """
    examples = task.heldout if examples is None else examples
    p = probe(
        model,
        tokenizer,
        task,
        examples=examples,
        samples=n,
        temperature=temperature,
        seed=seed,
        top_k=top_k,
        top_p=top_p,
        batch_size=batch_size,
    )
    out = {f"pass@{k}": 0.0 for k in ks} | {f"maj@{k}": 0.0 for k in ks}
    for j, e in enumerate(examples):
        outs = p.completions[j * n : (j + 1) * n]
        c = sum(p.correct[j * n : (j + 1) * n])
        for k in ks:
            out[f"pass@{k}"] += pass_at_k(n, c, k) / len(examples)
            out[f"maj@{k}"] += majority_correct(outs[:k], e.answer, task) / len(examples)
    return out
