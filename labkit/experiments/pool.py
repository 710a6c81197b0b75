"""Many runs at once: jobs spread over worker processes, one thread each, with one progress bar.

The tiny policy's small ops gain little from a second thread (a GRPO step at two threads is
~1.1-1.3x faster than at one), so on a 2-core machine two seeds in two one-thread processes
finish in about the time one seed takes at two threads. Each job runs whole in one process, so
seed k of a many-seed run computes exactly what a solo one-thread run of seed k computes.
Workers come from a ``forkserver`` that imported labkit once and never ran a torch op (a
process forked after torch's thread pool started can hang in OpenMP), and are reused across
jobs: the import is paid once per session, not once per worker.

A job is ``fn(**kwargs, tick=...)`` with ``fn`` importable (a module-level function), so it can
be sent to a worker; ``tick(done, total)`` moves the bar. With one worker the jobs run in this
process, at its own thread count (nothing to share the cores with).
"""

from __future__ import annotations

import concurrent.futures as cf
import multiprocessing
import os
import queue
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tqdm.auto import tqdm


@dataclass
class Job:
    """One run: ``fn(**kwargs, tick=...)``; ``label`` names it on the bar and in errors."""

    fn: Callable
    kwargs: dict
    label: str
    steps: int = 1
    """What ``tick``'s ``total`` will be (the bar's share of this job)."""
    done: int = field(default=0, compare=False)


def default_workers(jobs: int) -> int:
    """One worker per core, or ``LABKIT_WORKERS`` of them (``1``: every job in this process),
    no more than there are jobs."""
    cap = int(os.environ.get("LABKIT_WORKERS") or 0) or os.cpu_count() or 1
    return max(1, min(jobs, cap))


def exit_on_sigterm() -> None:
    """Make SIGTERM (``kill``, a job scheduler's stop) exit this process the way Ctrl-C does,
    so a running :func:`run_jobs` stops its workers too instead of leaving them to train on.
    For scripts (``scripts/run_experiment.py``); a notebook's interrupt needs nothing."""
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


def _init_worker(ticks) -> None:
    import torch

    torch.set_num_threads(1)
    global _TICKS
    _TICKS = ticks


_TICKS = None


def _run(index: int, fn: Callable, kwargs: dict):
    def tick(done: int, total: int) -> None:
        _TICKS.put((index, done))

    return fn(**kwargs, tick=tick)


def run_jobs(
    jobs: list[Job],
    workers: int | None = None,
    progress: bool = True,
    desc: str = "runs",
    on_tick: Callable[[], None] | None = None,
    every: float = 2.0,
) -> list:
    """Each job's return value, in order. ``on_tick()`` is called about every ``every`` seconds
    while jobs run (a live figure redraws from the run logs on disk)."""
    if not jobs:
        return []
    workers = workers or default_workers(len(jobs))
    bar = tqdm(total=sum(j.steps for j in jobs), desc=desc, disable=not progress)
    try:
        if workers == 1:
            return [_run_here(i, j, bar, on_tick) for i, j in enumerate(jobs)]
        return _run_pool(jobs, workers, bar, on_tick, every)
    finally:
        bar.close()


def _run_here(i: int, job: Job, bar, on_tick) -> object:
    def tick(done: int, total: int) -> None:
        bar.update(done - job.done)
        job.done = done
        if on_tick is not None:
            on_tick()

    return job.fn(**job.kwargs, tick=tick)


def _run_pool(jobs: list[Job], workers: int, bar, on_tick, every: float) -> list:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["labkit.experiments.harness"])
    with ctx.Manager() as manager:
        ticks = manager.Queue()
        with cf.ProcessPoolExecutor(
            workers, mp_context=ctx, initializer=_init_worker, initargs=(ticks,)
        ) as pool:
            try:
                return _wait(pool, ticks, jobs, bar, on_tick, every)
            except BaseException:  # an error, Ctrl-C, a kernel interrupt, SIGTERM: stop them all
                _stop(pool)
                raise


def _wait(pool: cf.ProcessPoolExecutor, ticks, jobs: list[Job], bar, on_tick, every) -> list:
    futures = [pool.submit(_run, i, j.fn, j.kwargs) for i, j in enumerate(jobs)]
    last = time.monotonic()
    while not all(f.done() for f in futures):
        _drain(ticks, jobs, bar, timeout=0.2)
        failed = next((f for f in futures if f.done() and f.exception()), None)
        if failed is not None:  # one error is the answer
            _result(failed, jobs[futures.index(failed)])
        if on_tick is not None and time.monotonic() - last >= every:
            on_tick()
            last = time.monotonic()
    _drain(ticks, jobs, bar, timeout=0)
    return [_result(f, j) for f, j in zip(futures, jobs)]


def _stop(pool: cf.ProcessPoolExecutor) -> None:
    """Cancel what has not started and terminate the workers: a running job cannot be
    cancelled, and ``shutdown`` alone would wait for it (or, if this process is killed, leave
    the workers training on with no one to read their results). A killed run resumes from its
    last checkpoint."""
    processes = list((pool._processes or {}).values())  # no public handle; taken before shutdown
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        p.terminate()
    for p in processes:
        p.join(timeout=10)


def _drain(ticks, jobs: list[Job], bar, timeout: float) -> None:
    try:
        while True:
            i, done = ticks.get(timeout=timeout)
            bar.update(done - jobs[i].done)
            jobs[i].done = done
            timeout = 0
    except queue.Empty:
        pass


def _result(future: cf.Future, job: Job):
    try:
        return future.result()
    except cf.process.BrokenProcessPool as e:
        raise RuntimeError(f"{job.label}: its worker process died ({e})") from e
    except Exception as e:
        if hasattr(e, "add_note"):  # Python 3.11+: say which run raised
            e.add_note(f"(in the run {job.label})")
        raise
