"""Preference pairs ``{"prompt", "chosen", "rejected"}`` (TRL's format), built from rollouts.

Two ways to rank a prompt's completions with the task's verifier:
- ``"correct_vs_incorrect"``: a correct completion is preferred to an incorrect one;
- ``"long2short"``: the shortest correct completion is preferred to a longer correct one (Kimi
  k1.5's long2short idea: same answer, fewer tokens).
"""

from __future__ import annotations

import random

import torch

from labkit.rollout import rollout

PAIR_MODES = ("correct_vs_incorrect", "long2short")


def rank_pairs(prompt: str, completions: list[str], correct: list[bool], mode: str,
               per_prompt: int = 1) -> list[dict]:
    """Up to ``per_prompt`` pairs from one prompt's completions and their verdicts.

    >>> rank_pairs("1+1=", ["2", "3", "2"], [True, False, True], "correct_vs_incorrect")
    [{'prompt': '1+1=', 'chosen': '2', 'rejected': '3'}]
    >>> rank_pairs("1+1=", ["2", " 2 ", "3"], [True, True, False], "long2short")
    [{'prompt': '1+1=', 'chosen': '2', 'rejected': ' 2 '}]
    """
    if mode not in PAIR_MODES:
        raise ValueError(f"mode={mode!r}: use one of {PAIR_MODES}")
    good = [c for c, ok in zip(completions, correct) if ok]
    if mode == "correct_vs_incorrect":
        bad = [c for c, ok in zip(completions, correct) if not ok]
        chosen_rejected = list(zip(good, bad))
    else:
        good = sorted(set(good), key=len)
        chosen_rejected = [(good[0], g) for g in good[1:] if len(g) > len(good[0])]
    return [{"prompt": prompt, "chosen": c, "rejected": r}
            for c, r in chosen_rejected[:per_prompt]]


@torch.no_grad()
def rollout_pairs(model, tokenizer, task, examples, num_generations: int = 8,
                  mode: str = "correct_vs_incorrect", temperature: float = 1.0, seed: int = 0,
                  per_prompt: int = 1, batch_size: int = 512) -> list[dict]:
    """Sample ``num_generations`` completions of each example's prompt, judge them with the
    task's verifier and keep up to ``per_prompt`` pairs per prompt (see :func:`rank_pairs`)."""
    gen = torch.Generator().manual_seed(seed)
    items = [e for e in examples for _ in range(num_generations)]
    texts = []
    for i in range(0, len(items), batch_size):
        chunk = items[i:i + batch_size]
        texts += rollout(model, tokenizer, [e.prompt for e in chunk],
                         task.max_answer_chars + 1, temperature, generator=gen).completions
    pairs = []
    for k, e in enumerate(examples):
        outs = texts[k * num_generations:(k + 1) * num_generations]
        pairs += rank_pairs(e.prompt, outs, [task.verify(c, e.answer) for c in outs], mode,
                            per_prompt)
    random.Random(seed).shuffle(pairs)
    return pairs


def demonstration_pairs(task, examples, seed: int = 0, min_gap: int = 10,
                        high: int | None = None) -> list[dict]:
    """The reference answer preferred to a clearly wrong number (|wrong - answer| >= ``min_gap``,
    drawn uniformly from [0, ``high``], default the largest answer among ``examples``): what a
    labeller marks at a glance. Integer answers only.

    >>> from labkit.tasks import get_task
    >>> t = get_task("addition"); p = demonstration_pairs(t, t.heldout[:2])[0]
    >>> p["chosen"] == t.heldout[0].answer, abs(int(p["rejected"]) - int(p["chosen"])) >= 10
    (True, True)
    """
    rng = random.Random(seed)
    high = high if high is not None else max(int(e.answer) for e in examples)
    pairs = []
    for e in examples:
        a = int(e.answer)
        wrong = rng.choice([n for n in range(max(high, a + min_gap) + 1) if abs(n - a) >= min_gap])
        pairs.append({"prompt": e.prompt, "chosen": e.answer, "rejected": str(wrong)})
    return pairs
