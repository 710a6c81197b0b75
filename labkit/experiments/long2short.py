"""Kimi k1.5's long2short pairs (arXiv 2501.12599, sec. 2.4) on ``graded``, thought against
thought: per prompt, the shortest correct answer with a thought is chosen over every longer
correct answer with a thought. Direct answers and wrong ones take no part, so a pair differs in
length only: on this task, mostly by re-checks (a step written again; ``graded_steps``).
Used by :mod:`labkit.experiments.kimi_length`.
"""

from __future__ import annotations

import random

import numpy as np
import torch

from labkit.algos.pairs import rank_pairs
from labkit.experiments.cells import redundant_steps
from labkit.models.rollout import rollout
from labkit.rewards.reasoning import think_format
from labkit.tasks import get_task
from labkit.tasks.base import max_completion_tokens

PAIR_G = 8
"""Samples per prompt for the pairs (Kimi's shortest rejection sampling uses n = 8)."""


def rechecks(completions: list[str], prompts: list[str], digits, **kwargs) -> list[float | None]:
    """A training-batch metric (weight 0): re-checks in each thought
    (:func:`~labkit.experiments.cells.redundant_steps`); None without a thought.

    >>> rechecks(["<think>3+5=8 3+5=8</think><answer>8</answer>", "<answer>8</answer>"],
    ...          prompts=["3+5="] * 2, digits=[1, 1])
    [1.0, None]
    """
    out = []
    for c, p, d, t in zip(completions, prompts, digits, think_format(completions)):
        out.append(float(redundant_steps(c, p, int(d))) if t else None)
    return out


def thought_pairs(prompt: str, completions: list[str], correct: list[bool]) -> list[dict]:
    """Long2short pairs among the correct answers that think: the shortest chosen, each longer
    one rejected (:func:`~labkit.algos.pairs.rank_pairs`); direct answers take no part.

    >>> t = lambda s: f"<think>{s}</think><answer>8</answer>"
    >>> p = thought_pairs("3+5=", [t("3+5=8 3+5=8"), "<answer>8</answer>", t("3+5=8"), t("x")],
    ...                   [True, True, True, False])
    >>> [(x["chosen"], x["rejected"]) == (t("3+5=8"), t("3+5=8 3+5=8")) for x in p]
    [True]
    """
    keep = [c for c, ok, th in zip(completions, correct, think_format(completions)) if ok and th]
    return rank_pairs(prompt, keep, [True] * len(keep), "long2short", per_prompt=len(keep))


@torch.no_grad()
def sample_pairs(model, tokenizer, n_prompts: int, seed: int) -> list[dict]:
    """:func:`thought_pairs` of ``PAIR_G`` samples (T = 1) of the policy on ``n_prompts``
    training prompts of ``graded``, drawn with ``seed``."""
    task = get_task("graded")
    ex = random.Random(seed).sample(task.train, n_prompts)
    gen = torch.Generator().manual_seed(seed)
    items, length = [e.prompt for e in ex for _ in range(PAIR_G)], max_completion_tokens(task)
    texts = []
    for i in range(0, len(items), 512):
        b = rollout(model, tokenizer, items[i : i + 512], length, temperature=1.0, generator=gen)
        texts += b.completions
    pairs = []
    for k, e in enumerate(ex):
        outs = texts[k * PAIR_G : (k + 1) * PAIR_G]
        pairs += thought_pairs(e.prompt, outs, [task.verify(c, e.answer) for c in outs])
    return pairs


def pair_stats(pairs: list[dict]) -> dict:
    """How many pairs, and the mean length and re-checks of chosen and rejected answers.

    >>> t = lambda s: f"<think>{s}</think><answer>8</answer>"
    >>> s = pair_stats([{"prompt": "3+5=", "chosen": t("3+5=8"), "rejected": t("3+5=8 3+5=8")}])
    >>> s["pairs"], s["rechecks chosen"], s["rechecks rejected"], s["length rejected"]
    (1, 0.0, 1.0, 44.0)
    """
    out: dict = {"pairs": len(pairs)}
    digits = [len(p["prompt"].split("+")[0]) for p in pairs]  # operands are zero-padded
    for side in ("chosen", "rejected"):
        n = [redundant_steps(p[side], p["prompt"], d) for p, d in zip(pairs, digits)]
        out[f"rechecks {side}"] = float(np.mean(n)) if pairs else float("nan")
        out[f"length {side}"] = float(np.mean([len(p[side]) for p in pairs])) if pairs else np.nan
    return out
