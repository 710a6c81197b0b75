"""What most experiments' arms share: a GRPO run of given settings on one seed, resumable,
summarised by its held-out accuracy and the means of its last steps.

>>> m = pd.DataFrame({"step": [1, 2, 3, 4], "entropy": [1.0, 0.8, 0.6, 0.4]})
>>> tail_means(m, ["entropy"], frac=0.5)
{'entropy (last 50%)': 0.5}
"""

from __future__ import annotations

import pandas as pd

from labkit.algos.grpo import GRPOTrainer
from labkit.experiments.harness import resume_or_start
from labkit.runs.evaluate import accuracy


def tail_means(metrics: pd.DataFrame, columns, frac: float = 0.1) -> dict:
    """Each column's mean over the last ``frac`` of the steps (at least one step), named
    ``"<column> (last 10%)"``: an end-of-run level less noisy than the last step alone."""
    tail = metrics.iloc[-max(1, round(len(metrics) * frac)) :]
    return {f"{c} (last {frac:.0%})": float(tail[c].mean()) for c in columns if c in tail}


def grpo_run(
    model: str,
    settings: dict,
    *,
    seed: int,
    steps: int,
    run_name: str,
    tick,
    until=None,
    trainer_cls=GRPOTrainer,
    **fixed,
):
    """A ``trainer_cls`` trained ``steps`` steps (or until ``until(trainer)``) on ``model``
    with ``fixed | settings`` and ``seed``, logged to ``runs/<run_name>`` (resumed from its
    checkpoints when it has some)."""
    kwargs = {"model": model, "seed": seed, "max_steps": steps, **fixed, **settings}
    return resume_or_start(trainer_cls, run_name, steps, tick, until=until, **kwargs)


def addition_run(settings: dict, *, seed: int, steps: int, run_name: str, tick, **fixed):
    """:func:`grpo_run` of the tiny policy on 2-digit addition with ``fixed | settings``, no
    KL-to-reference metrics (``track_kl=False``) and a checkpoint every third of the ``steps``,
    so that a stopped run resumes (lab 51's precision arms; labs 80 and 81's runs through
    ``off_policy.setting_run``)."""
    return grpo_run(
        "tiny",
        settings,
        seed=seed,
        steps=steps,
        run_name=run_name,
        tick=tick,
        task="addition",
        track_kl=False,
        save_steps=max(1, steps // 3),
        **fixed,
    )


def heldout_accuracy(trainer, n: int, max_len: int | None = None, seed: int = 0) -> float:
    """One sample at temperature 1 on each of the first ``n`` held-out prompts of the trainer's
    task (standard error ~ sqrt(p(1-p)/n): 0.025 at n = 400)."""
    return policy_accuracy(
        trainer.model, trainer.tokenizer, trainer.task, n, max_len or trainer.max_len, seed
    )


def policy_accuracy(model, tokenizer, task, n: int, max_len: int | None = None, seed: int = 0):
    """:func:`heldout_accuracy` of a policy outside a trainer (a cold start before its run):
    the same prompts and draws for the same ``seed``; ``max_len`` None: what the task needs."""
    return accuracy(
        model,
        tokenizer,
        task,
        task.heldout[:n],
        temperature=1.0,
        max_completion_length=max_len,
        seed=seed + 1,
    )


def live_log(experiment, arm: str, fast: bool = False, full: bool = False, seed: int | None = None):
    """The run log of ``arm`` on ``seed`` (default: the first) from a lab's "run it yourself"
    cell (``run_live(experiment, ..., fast=, full=)``), read back from disk: the doctor, the
    completion browser and the per-token view work on it as on any run."""
    from labkit.experiments.harness import slug
    from labkit.runs.log import load_run, runs_root

    cfg = experiment.live_config(fast=fast, full=full)
    seed = cfg["seeds"][0] if seed is None else seed
    return load_run(runs_root() / cfg["root"] / slug(arm) / f"seed-{seed}")


class Probes:
    """An ``until`` for :func:`grpo_run` / ``resume_or_start`` that never stops the run: at
    every ``every``-th step (and the last) it records ``fn(trainer)`` (a dict of scalars) as a
    row of ``<run folder>/probes.jsonl``. Each write keeps only the rows of earlier steps, so a
    run resumed from a checkpoint redoes the probes after it (``resume_or_start`` calls
    ``until`` once on the resumed step) and none is counted twice."""

    FILE = "probes.jsonl"

    def __init__(self, fn, every: int):
        self.fn, self.every = fn, max(1, every)

    def __call__(self, trainer) -> bool:
        from labkit.runs.log import load_jsonl, save_jsonl

        step = trainer.global_step
        if step % self.every == 0 or step == trainer.config.max_steps:
            path = trainer.log.path / self.FILE
            rows = [r for r in load_jsonl(path) if r["step"] < step] if path.exists() else []
            save_jsonl(path, [*rows, {"step": step, **self.fn(trainer)}])
        return False

    @classmethod
    def read(cls, trainer) -> pd.DataFrame:
        """The probes recorded for ``trainer``'s run, one row per probed step."""
        from labkit.runs.log import load_jsonl

        path = trainer.log.path / cls.FILE
        return pd.DataFrame(load_jsonl(path) if path.exists() else [])
