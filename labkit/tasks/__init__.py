"""Synthetic verifiable tasks: prompts, answers, a verifier and a train/held-out split.

No hub, no downloads: every task is generated in code from a seed, so a run is reproducible
offline. ``get_task(name)`` returns a :class:`Task`.

  base        the ``Task`` protocol: what a verifiable task gives the trainer and the rewards
  arithmetic  ``Addition``: two n-digit numbers, ``"07+35="`` -> ``"42"``
  ramble      ``AdditionRamble``: addition graded on the leading integer (room for length)
  scratchpad  ``Scratchpad``: five digits to add, ``<think>`` running sums then ``<answer>``
  graded      ``Graded``: 2-5 one-digit or 2-3 two-digit numbers to add: graded difficulty
  curriculum  ``PassRateSampler``: any task's prompts drawn by their running pass rate (Kimi k1.5)
  prompts     ``ShortPrompts``: short open-ended prompts shipped in ``labkit/data``
  hub         ``from_dataset`` (any prompt/answer dataset through ``datasets``), ``gsm8k``
              (needs the hub or a local file in its schema; answers checked with math-verify)
  trl_dataset ``TRLDataset``: TRL's prompt-only datasets (standard or conversational) as they are
  hub_access  hub ids fail at once when the hub cannot be reached (no ~50 s of retries)
"""

from labkit.tasks.arithmetic import Addition
from labkit.tasks.base import Task, max_completion_tokens
from labkit.tasks.curriculum import PassRateSampler
from labkit.tasks.graded import Graded
from labkit.tasks.hub import DatasetTask, from_dataset, gsm8k
from labkit.tasks.prompts import ShortPrompts
from labkit.tasks.ramble import AdditionRamble
from labkit.tasks.scratchpad import Scratchpad
from labkit.tasks.trl_dataset import TRLDataset

TASKS = {
    "addition": Addition,
    "short_prompts": ShortPrompts,
    "addition_ramble": AdditionRamble,
    "gsm8k": gsm8k,
    "scratchpad": Scratchpad,
    "graded": Graded,
}


def get_task(name: str = "addition", **kwargs) -> Task:
    """The task called ``name`` (see ``labkit.tasks.TASKS``); ``"<task>+<weight>"`` is that task's
    :class:`PassRateSampler` (``kwargs``: its ``pool`` and ``seed``), as the sampler names itself.

    >>> get_task("addition").name, get_task("addition+failure", pool=8).pool
    ('addition', 8)
    """
    if isinstance(name, Task):
        return name
    if isinstance(name, str) and name not in TASKS and "+" in name:
        base, weight = name.rsplit("+", 1)
        return PassRateSampler(get_task(base), weight=weight, **kwargs)
    if name == "trl_dataset":  # a run on a TRL dataset: its rows are not stored with it
        raise ValueError(
            "the run trained on a TRL dataset, which is not stored with the run: pass it "
            "again, from_run(name, task=lk.tasks.TRLDataset(train_dataset, eval_dataset))"
        )
    if name not in TASKS:
        raise ValueError(
            f"unknown task {name!r}: choose one of {sorted(TASKS)} (or "
            "'<task>+<weight>' for a PassRateSampler) or pass a labkit.tasks.Task "
            "instance"
        )
    return TASKS[name](**kwargs)


def saved_task(meta: dict):
    """The task of a run's ``config.json`` (``meta``): its name, or, when the run stored
    ``task_kwargs`` (:meth:`Task.spec`), the task rebuilt from the name and them.

    >>> saved_task({"task": "addition"}), saved_task({"task": "addition+uniform",
    ...                                               "task_kwargs": {"pool": 4}}).weight
    ('addition', 'uniform')
    """
    kwargs = meta.get("task_kwargs")
    return get_task(meta["task"], **kwargs) if kwargs else meta.get("task")


__all__ = [
    "TASKS",
    "Addition",
    "AdditionRamble",
    "DatasetTask",
    "Graded",
    "PassRateSampler",
    "Scratchpad",
    "TRLDataset",
    "Task",
    "from_dataset",
    "get_task",
    "gsm8k",
    "max_completion_tokens",
    "saved_task",
]
