"""The reward runtime: hard time limits (sleep, a C-level regex backtrack), errors that name the
function and the completion, the run log kept and the next step run; latency metrics; the
process pool and async paths; the code-execution sandbox against malicious code."""

import asyncio
import os
import pathlib
import re
import signal
import subprocess
import sys
import time

import pytest

import labkit as lk
from labkit.rewards import RewardError
from labkit.rewards.code import code_reward, run_code
from labkit.rewards.runtime import RewardRunner

LIMIT = 1.0
SMALL = {"num_generations": 2, "prompts_per_step": 2, "max_steps": 10, "track_kl": False}


def sleeps_forever(completions, **kwargs):
    time.sleep(10**6)


def backtracks(completions, **kwargs):
    """Catastrophic backtracking: re's matcher runs in C, no bytecode boundary to stop at."""
    return [float(bool(re.match(r"(a+)+$", "a" * 40 + "b"))) for _ in completions]


def test_a_hanging_reward_stops_the_step_within_the_limit_and_the_next_step_runs(runs):
    tr = lk.GRPOTrainer(
        reward_funcs=["digit_partial"], run_name="hang", reward_timeout=LIMIT, **SMALL
    )
    tr.step()
    tr.update(reward_funcs=[sleeps_forever])
    t0 = time.perf_counter()
    with pytest.raises(
        RewardError,
        match=r"'sleeps_forever' did not finish within 1 s.*"
        r"completion 0 .* hangs on its own",
    ):
        tr.step()
    took = time.perf_counter() - t0
    assert took < 2 * LIMIT + 3, took  # the limit, then the limit again to name the completion
    assert list(lk.load_run(runs / "hang").metrics["step"]) == [1]  # the log is intact
    tr.update(reward_funcs=["digit_partial"])
    m = tr.step()
    assert m["step"] == 2 and m["rewards/digit_partial/latency"] >= 0


@pytest.mark.slow
def test_a_regex_busy_loop_in_c_is_skipped_with_an_event_and_the_run_goes_on(runs):
    tr = lk.GRPOTrainer(
        reward_funcs=["digit_partial", backtracks],
        run_name="re",
        reward_timeout=LIMIT,
        reward_errors="skip",
        **SMALL,
    )
    t0 = time.perf_counter()
    m1, m2 = tr.step(), tr.step()
    assert time.perf_counter() - t0 < 2 * (2 * LIMIT + 3)
    assert m1["rewards/backtracks/errors"] == 1.0 and m2["step"] == 2
    assert m1["reward/mean"] == pytest.approx(m1["rewards/digit_partial/mean"])  # None: skipped
    ev = lk.load_run(runs / "re").events
    assert list(ev["kind"]) == ["reward_error", "reward_error"]
    assert "'backtracks' did not finish" in ev["error"].iloc[0]


def test_user_rewards_run_in_a_worker_and_builtins_inline():
    runner = RewardRunner(timeout=5.0, workers=2)

    def pid(completions, **kwargs):
        time.sleep(0.5)  # both halves at once: each goes to its own worker
        return [float(os.getpid())] * len(completions)

    assert runner.where(lk.digit_partial) == "inline" and runner.where(pid) == "process"
    out = runner(pid, ["a"] * 6, {}).values
    assert os.getpid() not in out and len(set(out)) == 2  # split over two worker processes
    echo = lambda completions, answer, **kw: [float(a) for a in answer]
    assert runner(echo, list("abcde"), {"answer": list("12345")}).values == [1, 2, 3, 4, 5]
    runner.close()


def test_a_reward_worker_left_alive_does_not_hang_the_harness_worker_at_exit():
    """A harness worker (a multiprocessing child) exits through multiprocessing's exit hook,
    which joins its live non-daemon children, not through ``atexit``: a reward worker of a
    runner nobody closed would wait for its next task while its parent waits for it. Run in a
    subprocess, so that a hang fails the test (and is killed) instead of stalling the suite."""
    code = (
        "from labkit.experiments.pool import Job, run_jobs\n"
        "import pool_jobs\n"
        "jobs = [Job(pool_jobs.scores_in_a_reward_worker, {}, str(i)) for i in range(2)]\n"
        "print(run_jobs(jobs, workers=2, progress=False))\n"
    )
    path = [str(pathlib.Path(__file__).parent), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    proc = subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, start_new_session=True
    )
    try:
        out, _ = proc.communicate(timeout=90)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the parent, its harness and reward workers
        proc.wait()
        pytest.fail("the harness workers did not exit: a reward worker kept them waiting")
    assert proc.returncode == 0 and out.decode().strip() == "[[2.0, 1.0], [2.0, 1.0]]"


def test_async_rewards_are_awaited_and_cut_at_the_limit():
    async def judge(completions, **kwargs):
        await asyncio.sleep(0.01)
        return [0.5] * len(completions)

    async def slow_judge(completions, **kwargs):
        await asyncio.sleep(100)

    runner = RewardRunner(timeout=LIMIT)
    assert runner.where(judge) == "async" and runner(judge, ["a"], {}).values == [0.5]
    t0 = time.perf_counter()
    with pytest.raises(RewardError, match="'slow_judge' did not finish within 1 s"):
        runner(slow_judge, ["a"], {})
    assert time.perf_counter() - t0 < LIMIT + 1


OUTSIDE = os.path.join(os.path.dirname(__file__), ".sandbox_escape_probe")
MALICIOUS = {
    "passes": ("def f():\n    return 1", "passed"),
    "infinite loop": ("while True:\n    pass", "timeout"),
    "fork bomb": ("import os\nwhile True:\n    os.fork()", "failed"),
    "huge allocation": ("x = bytearray(10**10)", "memory"),
    "write outside": (f"open({OUTSIDE!r}, 'w').write('escaped')", "failed"),
    "network": ("import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=1)", "failed"),
}


@pytest.mark.parametrize("name", MALICIOUS)
def test_the_code_sandbox_contains_malicious_code(name):
    code, status = MALICIOUS[name]
    r = run_code(code, "assert f() == 1" if name == "passes" else "", cpu_seconds=1, wall_seconds=4)
    assert r.status == status, (r, name)
    assert not os.path.exists(OUTSIDE)


@pytest.mark.slow
def test_a_run_scoring_malicious_code_goes_on_and_reports_it(runs):
    sandboxed = code_reward(cpu_seconds=1, wall_seconds=4)
    cases = [c for c, _ in MALICIOUS.values()]

    def code_cases(completions, **kwargs):  # the tiny model writes no code: score fixed cases
        texts = [cases[i % len(cases)] for i in range(len(completions))]
        out = sandboxed(texts, tests=["assert f() == 1"] * len(texts))
        code_cases.last_report = sandboxed.last_report
        return out

    code_cases.labkit_inline = True
    tr = lk.GRPOTrainer(
        reward_funcs=[code_cases], run_name="code", **{**SMALL, "num_generations": 3}
    )
    m1, m2 = tr.step(), tr.step()
    assert m2["step"] == 2
    assert m1["rewards/code_cases/passed"] == pytest.approx(1 / 6)
    assert m1["rewards/code_cases/timeout"] == pytest.approx(1 / 6)
    assert m1["rewards/code_cases/memory"] == pytest.approx(1 / 6)
    assert len(lk.load_run(runs / "code").samples) == 12


@pytest.mark.skipif(os.geteuid() != 0, reason="the network and user switch need root")
@pytest.mark.parametrize("name", ["infinite loop", "fork bomb", "write outside", "network"])
def test_the_os_limits_hold_without_the_python_guard(name, monkeypatch):
    """The audit-hook layer off: what remains is the kernel's (rlimits, netns, nobody)."""
    monkeypatch.setattr("labkit.rewards.code._PRELUDE", "")
    code, status = MALICIOUS[name]
    r = run_code(code, cpu_seconds=1, wall_seconds=4)
    assert r.status == status and not os.path.exists(OUTSIDE), r
    assert name != "write outside" or "Permission denied" in r.detail
    assert name != "network" or "unreachable" in r.detail
