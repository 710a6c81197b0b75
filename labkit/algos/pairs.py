"""Preference pairs ``{"prompt", "chosen", "rejected"}`` (TRL's format), built from rollouts.

Two ways to rank a prompt's completions with the task's verifier:
- ``"correct_vs_incorrect"``: a correct completion is preferred to an incorrect one;
- ``"long2short"``: the shortest correct completion is preferred to a longer correct one (Kimi
  k1.5's long2short idea: same answer, fewer tokens).
"""

from __future__ import annotations

import random

import torch

from labkit.core.options import PAIR_MODES, choose
from labkit.models.rollout import rollout
from labkit.tasks.base import max_completion_tokens


def rank_pairs(
    prompt: str, completions: list[str], correct: list[bool], mode: str, per_prompt: int = 1
) -> list[dict]:
    """Up to ``per_prompt`` pairs from one prompt's completions and their verdicts.

    >>> rank_pairs("1+1=", ["2", "3", "2"], [True, False, True], "correct_vs_incorrect")
    [{'prompt': '1+1=', 'chosen': '2', 'rejected': '3'}]
    >>> rank_pairs("1+1=", ["2", " 2 ", "3"], [True, True, False], "long2short")
    [{'prompt': '1+1=', 'chosen': '2', 'rejected': ' 2 '}]
    """
    choose("mode", mode, PAIR_MODES)
    good = [c for c, ok in zip(completions, correct) if ok]
    if mode == "correct_vs_incorrect":
        bad = [c for c, ok in zip(completions, correct) if not ok]
        chosen_rejected = list(zip(good, bad))
    else:
        good = sorted(set(good), key=len)
        chosen_rejected = [(good[0], g) for g in good[1:] if len(g) > len(good[0])]
    return [{"prompt": prompt, "chosen": c, "rejected": r} for c, r in chosen_rejected[:per_prompt]]


@torch.no_grad()
def rollout_pairs(
    model,
    tokenizer,
    task,
    examples,
    num_generations: int = 8,
    mode: str = "correct_vs_incorrect",
    temperature: float = 1.0,
    seed: int = 0,
    per_prompt: int = 1,
    batch_size: int = 512,
    max_completion_length: int | None = None,
) -> list[dict]:
    """Sample ``num_generations`` completions of each example's prompt, judge them with the
    task's verifier and keep up to ``per_prompt`` pairs per prompt (see :func:`rank_pairs`).
    Completions are up to ``max_completion_length`` tokens (None: what the task declares,
    :func:`~labkit.tasks.base.max_completion_tokens`; a task that declares nothing needs it)."""
    max_len = max_completion_tokens(task, max_completion_length)
    gen = torch.Generator(next(model.parameters()).device).manual_seed(seed)
    items = [e for e in examples for _ in range(num_generations)]
    texts = []
    for i in range(0, len(items), batch_size):
        chunk = items[i : i + batch_size]
        texts += rollout(
            model,
            tokenizer,
            [e.prompt for e in chunk],
            max_len,
            temperature=temperature,
            generator=gen,
        ).completions
    pairs = []
    for k, e in enumerate(examples):
        outs = texts[k * num_generations : (k + 1) * num_generations]
        pairs += rank_pairs(
            e.prompt, outs, [task.verify(c, e.answer) for c in outs], mode, per_prompt
        )
    random.Random(seed).shuffle(pairs)
    return pairs


def demonstration_pairs(
    task, examples, seed: int = 0, min_gap: int = 10, high: int | None = None
) -> list[dict]:
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


NEAR_MISSES = (
    "last_digit",
    "plus_minus_1",
    "plus_minus_10",
    "one_digit",
    "drop_digit",
    "extra_digit",
    "swap_digits",
)


def near_miss(answer: str, kind: str, rng: random.Random) -> str:
    """A wrong answer close to ``answer`` (a non-negative integer string), of the given kind.

    ``last_digit``: another units digit (the policy's most frequent error); ``plus_minus_1`` /
    ``plus_minus_10``: off by one / by ten; ``one_digit``: any one digit changed; ``drop_digit``
    / ``extra_digit``: one digit too few / too many; ``swap_digits``: two digits exchanged.

    >>> rng = random.Random(0)
    >>> [near_miss("75", k, rng) for k in NEAR_MISSES]
    ['77', '76', '85', '76', '5', '875', '57']
    """
    if kind not in NEAR_MISSES:
        raise ValueError(f"kind={kind!r}: use one of {NEAR_MISSES}")
    a, d = int(answer), rng.choice("0123456789")
    if kind == "last_digit":
        out = answer[:-1] + rng.choice([c for c in "0123456789" if c != answer[-1]])
    elif kind in ("plus_minus_1", "plus_minus_10"):
        step = 1 if kind == "plus_minus_1" else 10
        out = str(a + step if a < step or rng.random() < 0.5 else a - step)
    elif kind == "one_digit":
        i = rng.randrange(len(answer))
        out = answer[:i] + rng.choice([c for c in "0123456789" if c != answer[i]]) + answer[i + 1 :]
    elif kind == "drop_digit":
        i = rng.randrange(len(answer))
        out = answer[:i] + answer[i + 1 :] if len(answer) > 1 else answer + d
    elif kind == "extra_digit":
        i = rng.randrange(len(answer) + 1)
        out = answer[:i] + d + answer[i:]
    else:
        out = answer[::-1] if len(answer) == 2 else _swap(answer, rng)
    out = out.lstrip("0") or "0"
    return out if int(out) != a else str(a + 1)


def _swap(answer: str, rng: random.Random) -> str:
    i, j = sorted(rng.sample(range(len(answer)), 2)) if len(answer) > 1 else (0, 0)
    return answer[:i] + answer[j] + answer[i + 1 : j] + answer[i] + answer[j + 1 :]


POLICY_ERROR_MIX = {
    "last_digit": 4,
    "plus_minus_1": 4,
    "plus_minus_10": 1,
    "one_digit": 1,
    "drop_digit": 0.5,
    "extra_digit": 0.5,
    "swap_digits": 0.5,
}
"""Weights of the near-miss kinds, roughly the tiny SFT policy's own errors on held-out prompts:
mostly a wrong units digit (+-1 in two cases of three), then the tens digit, rarely the length."""


def near_miss_pairs(
    task, examples, per_example: int = 1, seed: int = 0, mix: dict | None = None
) -> list[dict]:
    """The reference answer preferred to ``per_example`` near misses of it (:func:`near_miss`,
    kinds drawn with weights ``mix``, default :data:`POLICY_ERROR_MIX`): free, unlimited pairs
    of the kind a policy gets wrong. Integer answers only.

    >>> from labkit.tasks import get_task
    >>> t = get_task("addition"); p = near_miss_pairs(t, t.heldout[:1], 3)
    >>> [x["chosen"] == t.heldout[0].answer != x["rejected"] for x in p]
    [True, True, True]
    """
    mix = mix or POLICY_ERROR_MIX
    rng = random.Random(seed)
    kinds, weights = list(mix), list(mix.values())
    return [
        {
            "prompt": e.prompt,
            "chosen": e.answer,
            "rejected": near_miss(e.answer, rng.choices(kinds, weights)[0], rng),
        }
        for e in examples
        for _ in range(per_example)
    ]
