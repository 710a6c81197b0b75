"""Kimi k1.5's long2short pairs (arXiv 2501.12599, sec. 2.4) on ``graded``, thought against
thought: per prompt, the shortest correct answer with a thought is chosen over every longer
correct answer with a thought. Direct answers and wrong ones take no part, so a pair differs in
length only: on this task, mostly by re-checks (a step written again; ``graded_steps``).
Then DPO from an RL policy (the ``acc`` arm's final checkpoint of the same seed) on that
policy's own pairs: :func:`dpo_arm`. Used by :mod:`labkit.experiments.kimi_length`.
"""

from __future__ import annotations

import math
import pathlib
import random
import time
from collections.abc import Callable

import numpy as np
import torch

from labkit.algos.dpo import DPOTrainer
from labkit.algos.pairs import rank_pairs
from labkit.experiments.cells import redundant_steps
from labkit.experiments.harness import resume_or_start, slug
from labkit.models.policy import load_policy
from labkit.models.rollout import rollout
from labkit.rewards.reasoning import think_format
from labkit.runs import checkpoint
from labkit.runs.log import RunInUse, runs_root
from labkit.tasks import get_task
from labkit.tasks.base import max_completion_tokens

PAIR_G = 8
"""Samples per prompt for the pairs (Kimi's shortest rejection sampling uses n = 8)."""
PAIR_PROMPTS = {"full": 2048, "fast": 16}
"""Training prompts the RL policy samples (``PAIR_G`` each) for long2short's pairs."""
ACC = "acc"
"""The arm whose final policy long2short starts from (the same seed's run)."""
DPO = {"beta": 0.1, "learning_rate": 3e-5, "batch_size": 32}
"""long2short's DPO settings (:mod:`labkit.experiments.kimi_length`'s docstring gives why)."""
DPO_SHARE = 0.5
"""long2short's DPO steps, as a share of the RL runs' steps (budget: kimi_length's docstring)."""
PASSES = 3
"""long2short's passes over its pairs (fewer steps than ``DPO_SHARE`` allows when pairs are few)."""


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


def acc_run_name(run_name: str) -> str:
    """The acc arm's run of the same root and seed: ``kimi_length/long2short/seed-3`` ->
    ``kimi_length/acc/seed-3``."""
    p = pathlib.PurePosixPath(run_name)
    return str(p.parent.parent / slug(ACC) / p.name)


def acc_policy(
    run_name: str, *, model_name: str, steps: int, train_acc: Callable, wait_s: float = 5.0
):
    """The acc arm's final policy of this seed (``model_name`` trained): read from its
    checkpoint at ``steps``; trained there first when it is missing (``train_acc(acc_run)``,
    a trainer), waited for while another process trains it."""
    acc = acc_run_name(run_name)
    while steps not in checkpoint.steps(runs_root() / acc):
        try:
            train_acc(acc).log.close()
        except RunInUse:  # the acc job of this seed, in another worker: its checkpoint will come
            time.sleep(wait_s)
    model, tok = load_policy(model_name)
    model.load_state_dict(checkpoint.read(runs_root() / acc, steps)["model"])
    return model, tok


def dpo_steps(pairs: int, steps: int) -> int:
    """DPO steps for ``pairs`` pairs: ``PASSES`` passes at ``DPO["batch_size"]`` a step, at most
    ``DPO_SHARE`` x the RL runs' ``steps``, at least one.

    >>> dpo_steps(230, 60), dpo_steps(1000, 60), dpo_steps(3, 60)
    (22, 30, 1)
    """
    cap = max(1, round(steps * DPO_SHARE))
    return max(1, min(cap, math.ceil(PASSES * pairs / DPO["batch_size"])))


def dpo_arm(
    *,
    seed: int,
    steps: int,
    fast: bool,
    run_name: str,
    tick,
    model_name: str,
    train_acc: Callable,
    pair_prompts: dict | None = None,
):
    """long2short: DPO from the acc policy of ``seed`` on its own thought-vs-thought pairs;
    (trainer or None without pairs, the policy, its tokenizer, the pairs' stats).
    ``model_name`` and ``train_acc``: :func:`acc_policy`'s; ``pair_prompts``: the prompts
    sampled for pairs, by mode (default ``PAIR_PROMPTS``)."""
    model, tok = acc_policy(run_name, model_name=model_name, steps=steps, train_acc=train_acc)
    n_prompts = (pair_prompts or PAIR_PROMPTS)["fast" if fast else "full"]
    pairs = sample_pairs(model, tok, n_prompts, seed)
    if not pairs:  # nothing to prefer: the policy stays as it is
        tick(steps, steps)
        return None, model, tok, pair_stats(pairs)
    n = dpo_steps(len(pairs), steps)
    trainer = resume_or_start(
        DPOTrainer,
        run_name,
        n,
        lambda done, total: tick(done * steps // n, steps),
        model=model,
        tokenizer=tok,
        pairs=pairs,
        task="graded",
        seed=seed,
        max_steps=n,
        save_steps=0,  # short; a killed one starts again from the acc policy
        **DPO,
    )
    return trainer, trainer.model, trainer.tokenizer, pair_stats(pairs)
