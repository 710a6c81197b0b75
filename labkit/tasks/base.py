"""The Task protocol: what a verifiable task gives the trainer and the rewards."""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class Example:
    """One prompt with its reference answer (a column the reward functions receive) and, from a
    dataset, its other columns (``columns``: each passed to the reward functions by name) and
    the prompt as the dataset gives it (``source``: chat messages that ``prompt`` renders)."""

    prompt: str
    answer: str
    columns: dict = field(default_factory=dict)
    source: object = None


class Task:
    """A verifiable task: a train split to sample prompts from, a held-out split to evaluate on.

    Subclasses fill ``self.train`` and ``self.heldout`` (lists of :class:`Example`) and define
    ``verify(completion, answer) -> bool``.
    """

    name = "task"
    train: list[Example]
    heldout: list[Example]
    verifies = True
    """False for a task with nothing to check completions against (no verifier): the trainer
    then reports no accuracy (NaN) unless it is given a ``verifier``."""

    def verify(self, completion: str, answer: str) -> bool:
        raise NotImplementedError

    def sample_prompts(self, n: int, rng: random.Random) -> list[Example]:
        """``n`` training examples drawn uniformly with replacement."""
        return [rng.choice(self.train) for _ in range(n)]

    def columns(self, examples: list[Example]) -> dict[str, list]:
        """Dataset columns passed to reward functions as ``**columns`` (TRL's convention): the
        prompts, the answers and every other column the examples carry.

        >>> Task().columns([Example("1+1=", "2", {"level": 1})])
        {'prompts': ['1+1='], 'answer': ['2'], 'level': [1]}
        """
        out = {"prompts": [e.prompt for e in examples], "answer": [e.answer for e in examples]}
        for name in dict.fromkeys(k for e in examples for k in e.columns):
            out.setdefault(name, [e.columns.get(name) for e in examples])
        return out

    def format_completions(self, texts: list[str]) -> list:
        """The completions as reward functions receive them: the texts here; a task with
        conversational prompts gives one assistant message each (TRL's format)."""
        return texts

    def use_tokenizer(self, tokenizer) -> None:
        """Told the policy's tokenizer once the trainer has it (a task whose prompts are chat
        messages renders them with its chat template); nothing to do for text prompts."""

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
    for attr in ("max_answer_chars", "max_completion_chars"):
        chars = getattr(task, attr, None)
        if chars is not None:
            return chars + 1
    raise ValueError(
        f"task {getattr(task, 'name', task)!r} gives no completion length (neither "
        "max_answer_chars nor max_completion_chars): pass max_completion_length="
        "<tokens per completion>, or give the task one of those properties"
    )
