"""Jobs for the worker-pool tests: importable module-level functions, as a worker needs."""

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
