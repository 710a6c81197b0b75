"""Jobs for the worker-pool tests: importable module-level functions, as a worker needs; and
``EXPERIMENT``, an experiment of two runs that only sleep (the harness's time-keeping test)."""

import os
import pathlib
import time


def sleeper(folder: str, seconds: float, tick) -> None:
    """Write this worker's pid to ``folder``, then sleep: a job that outlives its parent."""
    pathlib.Path(folder, f"{os.getpid()}.pid").write_text("")
    tick(0, 1)
    time.sleep(seconds)


def length(completions, **kwargs) -> list[float]:
    """A reward not marked ``labkit_inline``: the runtime runs it in a worker process."""
    return [float(len(c)) for c in completions]


def scores_in_a_reward_worker(tick) -> list[float]:
    """Score through a :class:`RewardRunner` whose reward worker outlives the job: the runner is
    still referenced when this (harness) worker process exits, as a trainer's is while it sits
    in a reference cycle that the garbage collector has not reached yet."""
    from labkit.rewards.runtime import RewardRunner

    runner = RewardRunner(timeout=30.0)
    runner.me = runner  # a cycle: only the garbage collector frees it, and it may never run
    tick(1, 1)
    return runner(length, ["ab", "c"], {}).values


def napper(arm, settings, *, seed, steps, fast, run_name, tick):
    """An experiment's ``train`` that trains nothing: it takes ``settings["seconds"]``."""
    import pandas as pd

    from labkit.experiments.harness import Outcome

    time.sleep(settings["seconds"])
    tick(steps, steps)
    return Outcome({"m": float(seed)}, pd.DataFrame({"step": [steps]}))


def _naps():
    from labkit.experiments.harness import Experiment

    return Experiment("naps", {"nap": {"seconds": 0.5}}, napper, steps=1, seeds=(0, 1))


EXPERIMENT = _naps()
"""Two runs of half a second each (the harness's time-keeping test)."""
