"""The Task protocol: what a verifiable task gives the trainer and the rewards."""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass
class Example:
    """One prompt with its reference answer (a column the reward functions receive)."""

    prompt: str
    answer: str


class Task:
    """A verifiable task: a train split to sample prompts from, a held-out split to evaluate on.

    Subclasses fill ``self.train`` and ``self.heldout`` (lists of :class:`Example`) and define
    ``verify(completion, answer) -> bool``.
    """

    name = "task"
    train: list[Example]
    heldout: list[Example]

    def verify(self, completion: str, answer: str) -> bool:
        raise NotImplementedError

    def sample_prompts(self, n: int, rng: random.Random) -> list[Example]:
        """``n`` training examples drawn uniformly with replacement."""
        return [rng.choice(self.train) for _ in range(n)]

    def columns(self, examples: list[Example]) -> dict[str, list]:
        """Dataset columns passed to reward functions as ``**columns`` (TRL's convention)."""
        return {"prompts": [e.prompt for e in examples], "answer": [e.answer for e in examples]}

    def spec(self) -> dict:
        """What ``get_task(self.name, **spec)`` needs besides the name to rebuild this task: {}
        for a task made from its name alone. A run's ``config.json`` keeps it as
        ``task_kwargs``, so ``from_run`` rebuilds the same task."""
        return {}

    def state_dict(self) -> dict:
        """What the task learns while a run trains (a sampler's counts): part of checkpoints."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` (a checkpoint's)."""

    def observe(self, examples: list[Example], correct) -> None:
        """Told after each step which sampled examples were answered right (``correct``: [B]
        bool tensor); a task that adapts what it samples (a curriculum) overrides it."""


def max_completion_tokens(task: Task, max_completion_length: int | None = None) -> int:
    """L_max, the tokens to sample per completion: ``max_completion_length`` when given, else
    what the task declares plus eos: ``max_answer_chars`` (a bare answer: addition, ...) or
    ``max_completion_chars`` (a thought then an answer: scratchpad). Characters bound the tokens
    of the character-level tiny policies, and of any tokenizer whose tokens are >= 1 character.

    >>> from labkit.tasks import get_task
    >>> [max_completion_tokens(get_task(n)) for n in ("addition", "scratchpad")]
    [4, 67]
    >>> max_completion_tokens(get_task("scratchpad"), 72)
    72
    """
    if max_completion_length is not None:
        return max_completion_length
    for field in ("max_answer_chars", "max_completion_chars"):
        chars = getattr(task, field, None)
        if chars is not None:
            return chars + 1
    raise ValueError(
        f"task {getattr(task, 'name', task)!r} gives no completion length (neither "
        "max_answer_chars nor max_completion_chars): pass max_completion_length="
        "<tokens per completion>, or give the task one of those properties"
    )
