"""What a reward function receives, as TRL 1.16's ``GRPOTrainer._calculate_rewards`` passes it.

TRL calls every reward function by keyword::

    fn(prompts=..., completions=..., completion_ids=..., **every_dataset_column,
       trainer_state=..., log_extra=..., log_metric=...)

``completion_ids`` are each completion's token ids up to and including eos (no padding),
``trainer_state`` is the trainer's ``transformers.TrainerState`` (a reward schedule reads
``global_step`` and ``max_steps``), ``log_extra(column, values)`` adds a column to the
completions table and ``log_metric(name, value)`` a scalar to the step's metrics (averaged
over the step). labkit passes the same names (:func:`bind`), with :class:`TrainerState`
holding the fields of transformers' that a reward reads, and :class:`RewardLog` collecting
what ``log_extra``/``log_metric`` are given.

Departure from TRL, for functions written before labkit passed everything by keyword: a
function whose first parameter is not one of these names (``def f(texts, **kw)``) gets the
completions positionally, and a function without ``**kwargs`` gets only the names it declares.

>>> def late_bonus(completions, trainer_state, **kwargs):
...     return [float(trainer_state.global_step >= 10)] * len(completions)
>>> late_bonus(**bind(late_bonus, ["a"], {"trainer_state": TrainerState(global_step=12)})[1])
[1.0]
"""

from __future__ import annotations

import inspect
import math
from collections import defaultdict
from dataclasses import dataclass

LOG_CALLBACKS = ("log_extra", "log_metric")
"""The two keyword arguments that are callbacks into the trainer (they cannot cross a process
boundary: a worker process collects into its own :class:`RewardLog`, sent back with the values)."""


@dataclass
class TrainerState:
    """The fields of ``transformers.TrainerState`` a reward function reads: the step the batch
    is scored at (``global_step``: steps done so far, as in TRL), the run's length and the
    epochs of training prompts seen. Picklable (it crosses to reward worker processes).

    >>> TrainerState(global_step=5, max_steps=20).progress
    0.25
    """

    global_step: int = 0
    max_steps: int = 0
    epoch: float = 0.0
    num_train_epochs: float = 0.0
    is_world_process_zero: bool = True
    is_local_process_zero: bool = True

    @property
    def progress(self) -> float:
        """global_step / max_steps: 0 at the start, 1 at the end (a schedule's x)."""
        return self.global_step / self.max_steps if self.max_steps else 0.0


class RewardLog:
    """What reward functions log during one scoring: ``extra`` (column -> one value per
    completion, :meth:`log_extra`) and ``metrics`` (name -> values, :meth:`log_metric`; the step
    records their mean, as TRL averages them over a logging step).

    >>> log = RewardLog(); log.log_extra("parsed", ["4", None]); log.log_metric("m", 1.0)
    >>> log.log_metric("m", 3.0); log.extra, log.means()
    ({'parsed': ['4', None]}, {'m': 2.0})
    """

    def __init__(self):
        self.extra: dict[str, list] = {}
        self.metrics: dict[str, list[float]] = defaultdict(list)

    def log_extra(self, column: str, values: list) -> None:
        """Add ``column`` (one value per completion) to the completion records (a second call
        for the same column replaces it)."""
        self.extra[column] = list(values)

    def log_metric(self, name: str, value: float) -> None:
        """Add ``value`` to the step's metric ``name`` (the mean over the step is recorded)."""
        self.metrics[name].append(float(value))

    def callbacks(self) -> dict:
        """``{"log_extra": ..., "log_metric": ...}``: what a reward function is passed."""
        return {"log_extra": self.log_extra, "log_metric": self.log_metric}

    @staticmethod
    def replay(extra: dict, metrics: dict, into: dict) -> None:
        """Hand a worker's ``extra`` and ``metrics`` to the callbacks in ``into`` (the caller's
        ``log_extra``/``log_metric``), as if the function had called them itself."""
        for column, values in extra.items():
            if callable(into.get("log_extra")):
                into["log_extra"](column, values)
        for name, values in metrics.items():
            for v in values:
                if callable(into.get("log_metric")):
                    into["log_metric"](name, v)

    @staticmethod
    def join(parts: list[tuple], into: dict) -> None:
        """Worker chunks' ``(n, extra, metrics)`` joined in completion order (None where a chunk
        did not log a column) and handed to the callbacks in ``into`` (:meth:`replay`)."""
        names = dict.fromkeys(c for _, extra, _ in parts for c in extra)
        extra = {c: [v for n, e, _ in parts for v in e.get(c, [None] * n)] for c in names}
        metrics: dict[str, list] = {}
        for _, _, m in parts:
            for name, values in m.items():
                metrics.setdefault(name, []).extend(values)
        RewardLog.replay(extra, metrics, into)

    def means(self) -> dict[str, float]:
        """Each logged metric's mean (NaN-skipping)."""
        out = {}
        for name, values in self.metrics.items():
            vals = [v for v in values if not math.isnan(v)]
            out[name] = sum(vals) / len(vals) if vals else math.nan
        return out


def _parameters(fn) -> list[inspect.Parameter] | None:
    try:
        return list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):  # a builtin or C callable: no signature to read
        return None


def bind(fn, completions: list, kwargs: dict) -> tuple[tuple, dict]:
    """``(args, kwargs)`` to call ``fn`` with, TRL's way: ``completions`` and ``kwargs`` by
    keyword; positionally for a function whose first parameter has another name; only the
    names a function without ``**kwargs`` declares.

    >>> bind(lambda completions, answer: 0, ["4"], {"answer": ["4"], "prompts": ["2+2="]})
    ((), {'answer': ['4'], 'completions': ['4']})
    >>> bind(lambda texts, **kw: 0, ["4"], {"answer": ["4"]})
    ((['4'],), {'answer': ['4']})
    """
    params = _parameters(fn)
    if params is None:
        return (), {**kwargs, "completions": completions}
    named = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params)
    given = {**kwargs, "completions": completions}
    first = next(
        (p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)), None
    )
    args: tuple = ()
    if first is not None and (first.kind is first.POSITIONAL_ONLY or first.name not in given):
        args, named = (completions,), named - {first.name}  # labkit's old positional call
        del given["completions"]
    if not takes_any:
        given = {k: v for k, v in given.items() if k in named}
    return args, given


def missing(fn, args: tuple, kwargs: dict) -> list[str]:
    """The parameters of ``fn`` without a default that ``(args, kwargs)`` leave unfilled: a
    column the reward needs and the data lacks (TRL's ``accuracy_reward`` needs ``solution``).

    >>> missing(lambda completions, solution, **kw: 0, (), {"completions": ["4"]})
    ['solution']
    """
    params = _parameters(fn) or []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    positional = [p.name for p in params if p.kind in kinds][: len(args)]
    return [
        p.name
        for p in params
        if p.default is p.empty
        and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        and p.name not in positional
        and p.name not in kwargs
    ]
