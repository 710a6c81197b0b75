"""A TRL dataset as a labkit task: what ``trl.GRPOTrainer(train_dataset=...)`` takes, taken as is.

TRL's prompt-only formats (its "Dataset formats" page): each row has a ``prompt``, either a
string (standard) or a list of chat messages (conversational,
``[{"role": "user", "content": ...}]``), and any other columns (``solution``, ...), which the
reward functions receive by name. ``data`` is a ``datasets.Dataset`` or ``DatasetDict`` (its
``train`` split), a hub id, a local .json/.jsonl/.csv/.parquet file or a list of dicts.

As TRL does: conversational prompts are rendered with the tokenizer's chat template
(``add_generation_prompt=True``, plus ``chat_template_kwargs``) and the reward functions get
each completion as one assistant message, ``[{"role": "assistant", "content": text}]``; the
``prompts`` they get are the dataset's own. Held-out prompts: ``eval_dataset``, else the data's
``test`` split, else a seeded ``heldout_fraction`` of the rows (TRL trains on every row; labkit
keeps some back to measure on). No accuracy unless there is a ``verifier``
(``verify(completion, answer) -> bool``, ``answer`` being the ``answer`` or ``solution`` column).
Departures from TRL: prompts are drawn uniformly with replacement (TRL walks through shuffled
epochs); a standard prompt is tokenized without special tokens, as every labkit prompt.

>>> task = TRLDataset([{"prompt": "1+1=", "solution": "2"}, {"prompt": "2+2=", "solution": "4"}],
...                   heldout_fraction=0.5)
>>> len(task.train), task.columns(task.train)["solution"], task.verifies
(1, ['4'], False)
"""

from __future__ import annotations

import random

from labkit.tasks.base import Example, Task
from labkit.tasks.hub import load_rows


def is_conversational(prompt) -> bool:
    """A list of chat messages (dicts with a ``role``), TRL's test.

    >>> is_conversational([{"role": "user", "content": "hi"}]), is_conversational("hi")
    (True, False)
    """
    return (
        isinstance(prompt, list)
        and bool(prompt)
        and isinstance(prompt[0], dict)
        and ("role" in prompt[0])
    )


def _rows(data, split: str) -> list[dict]:
    rows = [dict(r) for r in load_rows(data, split)]
    if not rows:
        raise ValueError(f"the {split} dataset is empty: give it at least one row with a 'prompt'")
    if "prompt" not in rows[0]:
        found = list(rows[0])
        fix = (
            "TRL's prompt-only format keeps the prompt in a 'prompt' column: a string, or a list "
            "of messages [{'role': 'user', 'content': ...}]"
        )
        if "messages" in found:
            fix += "; a 'messages' column is the conversational language-modeling format (SFT), "
            fix += "make 'prompt' the messages before the answer"
        else:
            fix += "; rename yours, e.g. dataset.rename_column('question', 'prompt')"
        raise ValueError(f"the {split} dataset has no 'prompt' column (columns: {found}). {fix}")
    return rows


def _has_split(data, split: str) -> bool:
    """Whether ``data`` is a DatasetDict (a dict with column names) holding ``split``."""
    return isinstance(data, dict) and hasattr(data, "column_names") and split in data


class TRLDataset(Task):
    """``TRLDataset(train_dataset, eval_dataset=None, verifier=None)``: module docstring."""

    def __init__(
        self,
        train_dataset,
        eval_dataset=None,
        *,
        verifier=None,
        heldout_fraction: float = 0.1,
        seed: int = 0,
        chat_template_kwargs: dict | None = None,
        max_completion_tokens: int = 256,
        name: str = "trl_dataset",
    ):
        rows = _rows(train_dataset, "train")
        if eval_dataset is not None:
            held = _rows(eval_dataset, "test")
        elif _has_split(train_dataset, "test"):
            held = _rows(train_dataset, "test")
        else:  # TRL holds nothing back; labkit keeps a seeded fraction to measure on
            if not 0.0 <= heldout_fraction < 1.0:
                raise ValueError(f"heldout_fraction={heldout_fraction}: use a value in [0, 1)")
            random.Random(seed).shuffle(rows)
            k = int(len(rows) * heldout_fraction) if len(rows) > 1 else 0
            held, rows = rows[:k], rows[k:]
        self.conversational = is_conversational(rows[0]["prompt"])
        self.train, self.heldout = self._examples(rows), self._examples(held)
        self.verifier, self.verifies = verifier, verifier is not None
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.max_completion_tokens, self.name = max_completion_tokens, name

    def _examples(self, rows: list[dict]) -> list[Example]:
        out = []
        for r in rows:
            if is_conversational(r["prompt"]) != self.conversational:
                raise ValueError(
                    "the dataset mixes standard (string) and conversational (messages) prompts: "
                    "use one format for every row"
                )
            answer = r.get("answer", r.get("solution", ""))
            columns = {k: v for k, v in r.items() if k != "prompt"}
            # the dataset's own prompt goes to the rewards; the text is rendered later
            text = None if self.conversational else r["prompt"]
            out.append(Example(text, "" if answer is None else str(answer), columns, r["prompt"]))
        return out

    @property
    def max_answer_chars(self) -> int:  # the trainer samples this + 1 tokens by default
        return self.max_completion_tokens - 1

    def use_tokenizer(self, tokenizer) -> None:
        """Render conversational prompts with ``tokenizer``'s chat template, as TRL does."""
        if not self.conversational:
            return
        if getattr(tokenizer, "chat_template", None) is None:
            raise ValueError(
                "the prompts are conversational (chat messages) but the tokenizer has no chat "
                "template: use a chat model's tokenizer, set tokenizer.chat_template, or give "
                "standard prompts (strings)"
            )
        for e in self.train + self.heldout:
            e.prompt = tokenizer.apply_chat_template(
                e.source,
                tokenize=False,
                add_generation_prompt=True,
                **self.chat_template_kwargs,
            )

    def columns(self, examples: list[Example]) -> dict[str, list]:
        """TRL's reward keywords: ``prompts`` as in the dataset, and every other column."""
        out = {"prompts": [e.source for e in examples]}
        for name in dict.fromkeys(k for e in examples for k in e.columns):
            out[name] = [e.columns.get(name) for e in examples]
        return out

    def format_completions(self, texts: list[str]) -> list:
        """Conversational: one assistant message per completion (TRL's); else the texts."""
        if not self.conversational:
            return texts
        return [[{"role": "assistant", "content": t}] for t in texts]

    def verify(self, completion: str, answer: str) -> bool:
        if self.verifier is None:
            raise ValueError(
                "this dataset has no verifier: pass verifier=fn(completion, answer) -> bool, "
                "or name one of the reward functions (verifier='accuracy_reward')"
            )
        return bool(self.verifier(completion, answer))
