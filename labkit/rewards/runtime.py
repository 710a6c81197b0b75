"""The reward runtime: every reward call of every trainer goes through one :class:`RewardRunner`.

Where a reward function runs (``reward_runtime``):

- ``"auto"`` (default): labkit's own pure-Python rewards (``REWARDS``, and functions marked
  ``fn.labkit_inline = True``) run inline in the trainer's thread: a process hop per call would
  cost more than the reward (measured in ``benchmarks/reward_runtime.py``). Every other
  function runs in a worker process with a hard time limit; ``async def`` functions (an LLM
  judge, any I/O) run on an event loop with the same limit.
- ``"process"``: every function in a worker process (``reward_workers`` > 1 splits the batch
  over that many processes, for CPU-heavy rewards).
- ``"inline"``: every function in the trainer's thread, no time limit (only for code you trust).

The time limit really stops the call: the worker process is killed and replaced (``pebble``),
so a call blocked in C (``time.sleep``, a regex backtracking) ends too; a thread cannot be
stopped there. The worker is forked from the trainer's process, so the function is inherited,
never pickled: lambdas, closures and the reward editor's functions work. Then the completion
that hung is named: each completion is tried alone, within the same limit again, so a hanging
call ends within about twice ``reward_timeout``. The call's arguments do cross to the worker
(pickled): TRL's ``log_extra``/``log_metric`` callbacks cannot, so the worker collects what
the function logs and sends it back with the values, and the caller's callbacks get it then.
The workers stop when the runner is closed or garbage-collected, and when its process exits: a
harness worker (:mod:`labkit.experiments.pool`) too, which would otherwise wait for them.

On an error (``reward_errors``): ``"raise"`` raises :class:`RewardError` naming the function,
the completion and the fix (the run log so far is kept, the next step can run); ``"skip"``
gives that function None (no reward) for the step, and the trainer logs a ``reward_error``
event and the metric ``rewards/<fn>/errors``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import hashlib
import inspect
import math
import multiprocessing
import multiprocessing.util as mp_util
import signal
import threading
import time
from dataclasses import dataclass, field

from labkit.core.options import REWARD_ERRORS, REWARD_RUNTIMES, choose
from labkit.rewards.builtin import REWARDS
from labkit.rewards.call import RewardError, call_reward, check_values, reward_name
from labkit.rewards.kwargs import LOG_CALLBACKS, RewardLog, bind

_INSTALLED: dict = {}  # in a worker process: key -> the reward function it runs


def _install(key: int, fn) -> None:
    # pebble's SIGTERM handler is Python code, which cannot run while the call is blocked in C
    # (a regex backtracking): it would wait 3 s for SIGKILL. The default action ends it at once.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _INSTALLED[key] = fn


def _run_installed(key: int, completions: list, columns: dict, logs: bool = False):
    """In a worker: ``(values, extra, metrics)``; what the function logged is collected here
    (``logs``: the caller passed ``log_extra``/``log_metric``) and goes back with the values."""
    log = RewardLog()
    values = call_reward(
        _INSTALLED[key], completions, {**columns, **(log.callbacks() if logs else {})}
    )
    return values, log.extra, dict(log.metrics)


def source_hash(fn) -> str:
    """8 hex digits of sha1 over ``fn``'s source (else its bytecode): its version in the log.

    >>> source_hash(REWARDS["exact_match"]) == source_hash(REWARDS["exact_match"])
    True
    """
    try:
        text = inspect.getsource(fn).encode()
    except (OSError, TypeError):  # the reward editor's or a lambda's: no file to read
        code = getattr(fn, "__code__", None)
        text = repr((code.co_code, code.co_consts)).encode() if code else repr(fn).encode()
    return hashlib.sha1(text).hexdigest()[:8]


def is_inline(fn) -> bool:
    """True for labkit's own cheap rewards (run in the trainer's thread under ``"auto"``).

    >>> is_inline(REWARDS["exact_match"]), is_inline(lambda completions, **kw: [])
    (True, False)
    """
    return fn in REWARDS.values() or getattr(fn, "labkit_inline", False)


@dataclass
class RewardResult:
    """One reward function's values on a batch, how long it took, and the error if it failed."""

    values: list[float]
    latency: float
    error: str | None = None
    extra: dict = field(default_factory=dict)  # fn.last_report: per-call counts, logged


def _slice(columns: dict, lo: int, hi: int, n: int) -> dict:
    return {
        k: (v[lo:hi] if isinstance(v, (list, tuple)) and len(v) == n else v)
        for k, v in columns.items()
    }


class RewardRunner:
    """Calls reward functions with a time limit; ``runner(fn, completions, columns)``.

    >>> runner = RewardRunner(timeout=5.0)
    >>> runner(REWARDS["exact_match"], ["4", "5"], {"answer": ["4", "4"]}).values
    [1.0, 0.0]
    >>> runner.close()
    """

    def __init__(
        self, timeout: float = 30.0, mode: str = "auto", workers: int = 1, on_error: str = "raise"
    ):
        choose("reward_runtime", mode, REWARD_RUNTIMES)
        choose("reward_errors", on_error, REWARD_ERRORS)
        if not timeout > 0:
            raise ValueError(f"reward_timeout={timeout}: use a positive number of seconds")
        if workers < 1:
            raise ValueError(f"reward_workers={workers}: use 1 or more processes")
        self.timeout, self.mode, self.workers, self.on_error = timeout, mode, workers, on_error
        self._pools: dict = {}  # id(fn) -> (fn, pebble pool)
        # multiprocessing's finalizer, not weakref's: a harness worker (a multiprocessing
        # child) never runs ``atexit``; it exits through multiprocessing's hook, which runs
        # these finalizers and then joins every live child. A reward worker still open there
        # waits for its next task while its parent waits for it to end: a hang.
        self._finalizer = mp_util.Finalize(self, _close_pools, (self._pools,), exitpriority=0)

    def where(self, fn) -> str:
        """'inline', 'async' or 'process': where ``fn`` runs under this runner's mode."""
        if self.mode == "inline" or (self.mode == "auto" and is_inline(fn)):
            return "inline"
        return "async" if inspect.iscoroutinefunction(fn) else "process"

    def __call__(self, fn, completions, columns: dict) -> RewardResult:
        """``fn``'s checked values on ``completions``; raises or skips on error (``on_error``)."""
        completions, t0 = list(completions), time.perf_counter()
        where = self.where(fn)
        try:
            if where == "inline":
                values = call_reward(fn, completions, columns)
            elif where == "async":
                values = self._call_async(fn, completions, columns)
            else:
                values = self._call_process(fn, completions, columns)
        except RewardError as e:
            if self.on_error == "raise":
                raise
            return RewardResult([math.nan] * len(completions), time.perf_counter() - t0, str(e))
        extra = getattr(fn, "last_report", None) if where != "process" else None
        return RewardResult(values, time.perf_counter() - t0, None, dict(extra or {}))

    # -- async (I/O-bound: an LLM judge) ---------------------------------------------------
    def _call_async(self, fn, completions, columns):
        args, kwargs = bind(fn, completions, columns)

        async def bounded():
            return await asyncio.wait_for(fn(*args, **kwargs), self.timeout)

        def run():
            return asyncio.run(bounded())

        try:
            asyncio.get_running_loop()
            running = True
        except RuntimeError:
            running = False
        try:
            if running:  # Jupyter's loop runs in this thread: use another one
                with cf.ThreadPoolExecutor(1) as ex:
                    values = ex.submit(run).result()
            else:
                values = run()
        except TimeoutError:  # asyncio.wait_for's; the coroutine was cancelled
            raise self._timeout_error(fn, completions, None) from None
        except Exception as e:  # the user's code: one readable error
            raise RewardError(
                f"reward function {reward_name(fn)!r} raised "
                f"{type(e).__name__}: {e}. Fix the function; the run log so far "
                "is kept."
            ) from e
        return check_values(reward_name(fn), values, completions)

    # -- worker processes ------------------------------------------------------------------
    def _pool(self, fn):
        from pebble import ProcessPool

        entry = self._pools.get(id(fn))
        if entry is None or entry[0] is not fn:
            methods = multiprocessing.get_all_start_methods()
            ctx = multiprocessing.get_context("fork" if "fork" in methods else None)
            pool = ProcessPool(
                self.workers, initializer=_install, initargs=(id(fn), fn), context=ctx
            )
            entry = self._pools[id(fn)] = (fn, pool)
        return entry[1]

    def _call_process(self, fn, completions, columns):
        pool, n = self._pool(fn), len(completions)
        k = max(1, math.ceil(n / self.workers))
        logs = any(name in columns for name in LOG_CALLBACKS)
        sent = {c: v for c, v in columns.items() if c not in LOG_CALLBACKS}  # not picklable
        futures = [
            pool.schedule(
                _run_installed,
                (id(fn), completions[lo : lo + k], _slice(sent, lo, lo + k, n), logs),
                timeout=self.timeout,
            )
            for lo in range(0, max(n, 1), k)
        ]
        out, parts = [], []
        for f in futures:
            try:
                values, extra, metrics = f.result()
                out += values
                parts.append((len(values), extra, metrics))
            except cf.TimeoutError:
                for g in futures:
                    g.cancel()
                raise self._timeout_error(
                    fn, completions, self._locate(fn, completions, columns)
                ) from None
            except RewardError:
                raise
            except Exception as e:  # noqa: BLE001 - a worker that died (segfault, os._exit)
                raise RewardError(
                    f"reward function {reward_name(fn)!r}: its worker process "
                    f"failed ({type(e).__name__}: {e}); a new one is started "
                    "for the next call"
                ) from None
        RewardLog.join(parts, columns)
        return out

    def _locate(self, fn, completions, columns) -> int | None:
        """The first completion that hangs alone, within one more ``timeout`` in all."""
        pool, n, end = self._pool(fn), len(completions), time.monotonic() + self.timeout
        for i in range(n):
            left = end - time.monotonic()
            if left <= 0:
                return None
            f = pool.schedule(
                _run_installed,
                (id(fn), completions[i : i + 1], _slice(columns, i, i + 1, n)),
                timeout=left,
            )
            try:
                f.result()
            except cf.TimeoutError:
                return i
            except Exception:  # noqa: BLE001, S112 - an error alone is not the hang we look for
                continue
        return None

    def _timeout_error(self, fn, completions, i: int | None) -> RewardError:
        where = (
            f"completion {i} ({completions[i][:80]!r}) hangs on its own"
            if i is not None
            else "no single completion was found to hang alone"
        )
        return RewardError(
            f"reward function {reward_name(fn)!r} did not finish within "
            f"{self.timeout:g} s on {len(completions)} completions; {where}. "
            "Its worker was stopped. Fix the function (an endless loop, a "
            "blocking call, a regex that backtracks?) or raise reward_timeout."
        )

    def guard(self, fn):
        """``fn`` through this runner, in TRL's signature: pass it to TRL's ``GRPOTrainer``
        (or any trainer that calls reward functions itself) to get the time limit there too.

        >>> slow = RewardRunner(timeout=0.5).guard(lambda completions, **kw: time.sleep(9))
        >>> slow(["a"])
        Traceback (most recent call last):
        ...
        labkit.rewards.call.RewardError: reward function '<lambda>' did not finish within 0.5 s on 1 completions; completion 0 ('a') hangs on its own. Its worker was stopped. Fix the function (an endless loop, a blocking call, a regex that backtracks?) or raise reward_timeout.
        """

        def reward(completions, **columns):
            return self(fn, completions, columns).values

        reward.__name__ = reward_name(fn)
        reward.labkit_inline = True  # already guarded: no second hop
        return reward

    def close(self) -> None:
        """Stop the worker processes (also done when the runner is garbage-collected and when
        its process exits)."""
        _close_pools(self._pools)


def _close_pools(pools: dict) -> None:
    for _, pool in list(pools.values()):
        pool.stop()
        threading.Thread(target=pool.join, daemon=True).start()
    pools.clear()


def run_rewards(runner: RewardRunner, funcs, completions, columns: dict):
    """Every ``(fn, weight)`` of ``funcs`` through ``runner``: (values by name, metrics, errors).

    The metrics are ``rewards/<fn>/latency`` (seconds of the call), ``rewards/<fn>/errors``
    (1 when it failed and was skipped) and ``rewards/<fn>/<key>`` for each ``fn.last_report``.

    >>> per_fn, info, errors = run_rewards(RewardRunner(), [(REWARDS["exact_match"], 1.0)],
    ...                                    ["4"], {"answer": ["4"]})
    >>> per_fn, sorted(info), errors
    ({'exact_match': [1.0]}, ['rewards/exact_match/latency'], {})
    """
    per_fn, info, errors = {}, {}, {}
    for fn, _ in funcs:
        name = reward_name(fn)
        res = runner(fn, completions, columns)
        per_fn[name] = res.values
        info[f"rewards/{name}/latency"] = res.latency
        info.update({f"rewards/{name}/{k}": float(v) for k, v in res.extra.items()})
        if res.error is not None:
            info[f"rewards/{name}/errors"] = 1.0
            errors[name] = res.error
    return per_fn, info, errors
