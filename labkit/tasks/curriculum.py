"""Prioritized sampling by per-prompt pass rate (Kimi k1.5, arXiv 2501.12599, section 2.3.4).

Kimi k1.5 tracks each problem's success rate s_i under the current policy and samples problems
with probability proportional to 1 - s_i, so the ones the policy fails get more training. A
second rule spends samples where GRPO learns at all: a group of G answers gives a gradient only
when its rewards differ, with probability 1 - s^G - (1 - s)^G, largest near s = 1/2 (the
Bernoulli variance s (1 - s) is the same shape). :class:`PassRateSampler` wraps any task:

- ``weight="uniform"``: every prompt of the pool equally (the baseline);
- ``weight="failure"``: w_i = 1 - s_i (Kimi's prioritized sampling);
- ``weight="variance"``: w_i = s_i (1 - s_i) (GRPO's signal);
- ``weight="easy-first"``: a curriculum by difficulty (Kimi's "curriculum sampling", same
  section): on a task with difficulty cells (``graded``: ``task.cells``, easiest first), only
  the easiest cell's prompts at first, one more cell unlocked every ``horizon / cells`` draws
  (``horizon``: the run's steps), every cell equally from then on.

s_i = (c_i + 1) / (n_i + 2) (Laplace's rule: an unseen prompt counts as 1/2) from the trainer's
verifier results, which :class:`~labkit.algos.grpo.GRPOTrainer` reports after each step through
``observe``. The pool is a fixed sample of ``pool`` train prompts, so each is seen several times
in a short run (with 20,000 prompts and a few hundred draws, no pass rate is ever known).

A run on a sampler resumes by name: its ``config.json`` keeps the name (``"scratchpad+failure"``,
which ``get_task`` reads back) and ``pool`` and ``seed`` (``task_kwargs``), and its checkpoints
the counts n_i, c_i (:meth:`PassRateSampler.state_dict`), so a resumed run draws what an
uninterrupted one would.
"""

from __future__ import annotations

import random

import torch

from labkit.core.options import SAMPLER_WEIGHTS, choose
from labkit.tasks.base import Example, Task


class PassRateSampler(Task):
    """``PassRateSampler(get_task("scratchpad"), weight="failure", pool=256)``: the task's
    verifier, columns and held-out split; train prompts drawn by their running pass rate.

    >>> from labkit.tasks import get_task
    >>> t = PassRateSampler(get_task("addition"), weight="failure", pool=4)
    >>> t.observe(t.train[:1] * 3, torch.tensor([True, True, True]))
    >>> round(t.pass_rate(t.train[0]), 2), round(t.pass_rate(t.train[1]), 2)
    (0.8, 0.5)
    """

    def __init__(
        self,
        task: Task,
        weight: str = "failure",
        pool: int = 256,
        seed: int = 0,
        horizon: int | None = None,
    ):
        choose("weight", weight, SAMPLER_WEIGHTS)
        if not 1 <= pool <= len(task.train):
            raise ValueError(f"pool={pool}: use 1 to {len(task.train)} (the task's train size)")
        if weight == "easy-first" and not (getattr(task, "cells", None) and (horizon or 0) >= 1):
            raise ValueError(
                f"weight='easy-first' needs a task with difficulty cells (graded; got "
                f"{task.name!r}) and horizon >= 1, the draws over which cells unlock (got "
                f"{horizon!r}): PassRateSampler(get_task('graded'), 'easy-first', horizon=steps)"
            )
        self.task, self.weight, self.pool, self.seed = task, weight, pool, seed
        self.horizon, self.draws = horizon, 0  # draws: sample_prompts calls so far
        self.name = f"{task.name}+{weight}"  # get_task reads it back
        self.train = random.Random(seed).sample(task.train, pool)
        self.heldout = task.heldout
        self.seen = dict.fromkeys((e.prompt for e in self.train), 0)  # n_i
        self.right = dict.fromkeys((e.prompt for e in self.train), 0)  # c_i

    def __getattr__(self, name):  # max_completion_chars, max_answer_chars, operands, ...
        if name == "task":
            raise AttributeError(name)
        return getattr(self.task, name)

    def verify(self, completion: str, answer: str) -> bool:
        return self.task.verify(completion, answer)

    @property
    def verifies(self) -> bool:
        return self.task.verifies

    def columns(self, examples: list[Example]) -> dict[str, list]:
        return self.task.columns(examples)

    def format_completions(self, texts: list[str]) -> list:
        return self.task.format_completions(texts)

    def use_tokenizer(self, tokenizer) -> None:
        self.task.use_tokenizer(tokenizer)

    def spec(self) -> dict:
        """``{"pool", "seed"}`` (and ``horizon`` when set): with the name, what ``get_task``
        rebuilds the sampler from."""
        out = {"pool": self.pool, "seed": self.seed}
        return out | ({"horizon": self.horizon} if self.horizon is not None else {})

    def state_dict(self) -> dict:
        """The counts n_i (``seen``) and c_i (``right``) per pool prompt, and the draws."""
        return {"seen": dict(self.seen), "right": dict(self.right), "draws": self.draws}

    def load_state_dict(self, state: dict) -> None:
        """Restore the counts of :meth:`state_dict`; refuses counts of another pool."""
        if set(state["seen"]) != set(self.seen):
            raise ValueError(
                f"task {self.name!r}: the saved pass-rate counts are for another "
                "prompt pool; rebuild the sampler with the run's pool and seed "
                "(task_kwargs in its config.json)"
            )
        self.seen, self.right = dict(state["seen"]), dict(state["right"])
        self.draws = state.get("draws", 0)

    def pass_rate(self, e: Example) -> float:
        """s_i = (c_i + 1) / (n_i + 2): the prompt's running pass rate, 1/2 before any answer."""
        return (self.right[e.prompt] + 1) / (self.seen[e.prompt] + 2)

    def weights(self) -> list[float]:
        """w_i per pool prompt under ``weight``."""
        if self.weight == "easy-first":
            return [float(self.level(e) < self.unlocked()) for e in self.train]
        s = [self.pass_rate(e) for e in self.train]
        if self.weight == "uniform":
            return [1.0] * len(s)
        return [1 - x if self.weight == "failure" else x * (1 - x) for x in s]

    def level(self, e: Example) -> int:
        """The example's difficulty cell, as its rank in ``task.cells`` (0: the easiest)."""
        cells = [f"{k}x{d}" for k, d in self.task.cells]
        return cells.index(e.columns["bucket"])

    def unlocked(self) -> int:
        """``easy-first``: how many cells (easiest first) the next draw may take from.

        >>> from labkit.tasks import get_task
        >>> t = PassRateSampler(get_task("graded"), "easy-first", pool=64, horizon=12)
        >>> [t.unlocked() for t.draws in (0, 1, 2, 5, 11, 12, 40)]
        [1, 1, 2, 3, 6, 6, 6]
        """
        n = len(self.task.cells)
        return min(n, 1 + n * self.draws // self.horizon)

    def sample_prompts(self, n: int, rng: random.Random) -> list[Example]:
        """``n`` pool prompts drawn with replacement, with probability proportional to w_i."""
        w = self.weights()
        if not any(w):
            raise ValueError(
                f"task {self.name!r}: every pool prompt has weight 0 (the unlocked cells have no "
                "prompt in the pool): use a larger pool"
            )
        self.draws += 1
        return rng.choices(self.train, weights=w, k=n)

    def observe(self, examples: list[Example], correct: torch.Tensor) -> None:
        """Count the verifier's results ([B] bool) of one step: n_i += 1, c_i += correct."""
        for e, ok in zip(examples, correct.tolist()):
            if e.prompt in self.seen:
                self.seen[e.prompt] += 1
                self.right[e.prompt] += int(ok)
