"""Tasks from any prompt/answer dataset (``datasets``), answers checked with ``math-verify``.

``from_dataset(data, prompt="question", answer="answer")``: ``data`` is a hub id
(``"openai/gsm8k"``), a local file (.json/.jsonl/.csv/.parquet) or folder, a ``datasets``
Dataset/DatasetDict, or a list of dicts. ``gsm8k()`` is GSM8K (Cobbe et al. 2021, 2110.14168):
its answers end with ``#### <number>``, which is what the verifier compares, through
math-verify's parse/verify (HF's Math-Verify; what TRL's ``accuracy_reward`` uses).
"""

from __future__ import annotations

import pathlib
import random

from labkit.tasks.base import Example, Task
from labkit.tasks.hub_access import check_hub

BOXED = "{question}\nPlease reason step by step, and put your final answer within \\boxed{{}}."
"""The prompt template of the R1/Qwen math recipes (the final answer in \\boxed{})."""
LOCAL_FORMATS = {".json": "json", ".jsonl": "json", ".csv": "csv", ".parquet": "parquet"}


def gsm8k_answer(text: str) -> str:
    """GSM8K's final answer: what follows ``####``, thousands separators removed.

    >>> gsm8k_answer("She has 3 + 4 = <<3+4=7>>7 apples.\\n#### 1,007")
    '1007'
    """
    return text.split("####")[-1].strip().replace(",", "")


def load_rows(data, split: str):
    """Rows (a list of dicts) of ``split`` from whatever ``data`` is."""
    if isinstance(data, list):
        return data
    import datasets

    if isinstance(data, (str, pathlib.Path)):
        path = pathlib.Path(data)
        if path.suffix in LOCAL_FORMATS:
            return list(
                datasets.load_dataset(
                    LOCAL_FORMATS[path.suffix], data_files=str(path), split="train"
                )
            )
        name, _, config = str(data).partition(":")  # "openai/gsm8k:main"
        cache_only = not path.exists() and check_hub(  # a hub id: fail at once offline
            name,
            "dataset",
            f"dataset {name!r} is not a local file or folder",
            "Pass a local file in its format (.json/.jsonl/.csv/.parquet), a "
            "datasets.Dataset or a list of dicts.",
        )
        offline = datasets.config.HF_HUB_OFFLINE
        datasets.config.HF_HUB_OFFLINE = offline or cache_only
        try:  # cached and the hub unreachable: read the cache without asking the hub
            data = datasets.load_dataset(name, config or None)
        finally:
            datasets.config.HF_HUB_OFFLINE = offline
    if isinstance(data, datasets.DatasetDict):
        if split not in data:
            raise ValueError(f"split={split!r} is not in the dataset: use one of {list(data)}")
        data = data[split]
    return list(data)


class DatasetTask(Task):
    """A verifiable task over a dataset's (prompt, answer) columns; see :func:`from_dataset`."""

    def __init__(
        self,
        train: list[Example],
        heldout: list[Example],
        name: str,
        max_completion_tokens: int = 256,
    ):
        if not train:
            raise ValueError(f"task {name!r} has no training examples: check the file/split")
        self.train, self.heldout, self.name = train, heldout, name
        self.max_completion_tokens = max_completion_tokens

    @property
    def max_answer_chars(self) -> int:  # the trainer samples this + 1 tokens by default
        return self.max_completion_tokens - 1

    def verify(self, completion: str, answer: str) -> bool:
        """math-verify: the completion's final answer (\\boxed{}, LaTeX or a plain number)
        equals the reference mathematically (1/2 == 0.5 == \\frac{1}{2})."""
        try:
            from math_verify import parse, verify
        except ImportError as e:  # a clear message instead of a bare ImportError
            raise ImportError(
                "answers are checked with math-verify: pip install math-verify==0.9.0"
            ) from e
        gold = parse(answer)
        return bool(gold) and bool(verify(gold, parse(completion)))

    def accuracy_reward(self, completions: list[str], answer: list[str], **kwargs) -> list[float]:
        """1.0 when :meth:`verify` accepts the completion, else 0.0 (TRL's reward signature)."""
        return [float(self.verify(c, a)) for c, a in zip(completions, answer)]


def from_dataset(
    data,
    prompt: str = "question",
    answer: str = "answer",
    train_split: str = "train",
    heldout_split: str | None = "test",
    template: str = "{question}",
    answer_fn=None,
    name: str = "dataset",
    heldout_fraction: float = 0.1,
    seed: int = 0,
    limit: int | None = None,
    max_completion_tokens: int = 256,
) -> DatasetTask:
    """A :class:`DatasetTask` from ``data``'s ``prompt`` and ``answer`` columns.

    ``template`` formats the prompt (``{question}`` is the prompt column); ``answer_fn`` maps the
    raw answer column to what is verified (GSM8K: :func:`gsm8k_answer`). Held-out: the
    ``heldout_split`` when the data has it, else a seeded ``heldout_fraction`` of the rows.
    """
    rows = load_rows(data, train_split)
    for col in (prompt, answer):
        if rows and col not in rows[0]:
            raise ValueError(
                f"column {col!r} is not in the data (columns: {list(rows[0])}): "
                f"pass prompt=... and answer=... with the right names"
            )
    answer_fn = answer_fn or (lambda a: str(a).strip())

    def examples(rs):  # the other columns go to the reward functions by name (TRL's way)
        return [
            Example(
                template.format(question=r[prompt]),
                answer_fn(r[answer]),
                {k: v for k, v in r.items() if k not in (prompt, answer)},
            )
            for r in rs[:limit]
        ]

    one_file = isinstance(data, list) or pathlib.Path(str(data)).suffix in LOCAL_FORMATS
    held = None if one_file or heldout_split is None else load_rows(data, heldout_split)
    if held is None:  # one file or list: a seeded split
        rows = rows[:]
        random.Random(seed).shuffle(rows)
        k = max(1, int(len(rows) * heldout_fraction))
        held, rows = rows[:k], rows[k:]
    return DatasetTask(examples(rows), examples(held), name, max_completion_tokens)


def gsm8k(path=None, template: str = BOXED, **kwargs) -> DatasetTask:
    """GSM8K (``openai/gsm8k``, config ``main``; or a local file in its schema: ``question``,
    ``answer`` ending in ``#### <number>``), verified with math-verify."""
    return from_dataset(
        path or "openai/gsm8k:main",
        "question",
        "answer",
        template=template,
        answer_fn=gsm8k_answer,
        name="gsm8k",
        **kwargs,
    )
