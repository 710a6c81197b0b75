"""The experiment harness (labkit.experiments.harness, pool, claims, results): the verdict rule,
a stored result's round trip, runs in worker processes equal to solo runs, a many-seed run
killed mid-way resumes every seed from its own checkpoint, nothing lost or mixed, and a result
read back from finished runs keeps the runs' own seconds."""

import json
import math
import os
import pathlib
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest
import torch

from labkit.experiments import dapo, results
from labkit.experiments.claims import Claim, decide, judge
from labkit.experiments.harness import Outcome, Result, slug
from labkit.experiments.tables import measured_section
from labkit.runs import checkpoint
from labkit.runs.log import load_run


def claim(direction=1, effect=None, margin=None):
    return Claim(
        "c",
        "t",
        "s",
        metric="m",
        arm="B",
        baseline="A",
        direction=direction,
        effect=effect,
        margin=margin,
    )


@pytest.mark.parametrize(
    "kw, low, high, want",
    [
        ({}, 0.01, 0.2, "reproduced"),
        ({}, -0.2, -0.01, "not reproduced"),
        ({}, -0.1, 0.1, "inconclusive"),
        ({"direction": -1}, -0.2, -0.01, "reproduced"),
        ({"direction": -1}, 0.01, 0.2, "not reproduced"),
        ({"effect": 0.3}, 0.01, 0.2, "not reproduced"),  # excludes the paper's effect size
        ({"effect": 0.1}, 0.01, 0.2, "reproduced"),
        ({"direction": 0, "margin": 0.05}, -0.02, 0.03, "reproduced"),
        ({"direction": 0, "margin": 0.05}, 0.06, 0.2, "not reproduced"),
        ({"direction": 0, "margin": 0.05}, -0.02, 0.2, "inconclusive"),
    ],
)
def test_the_verdict_rule(kw, low, high, want):
    assert decide(claim(**kw), low, high) == want


def test_judge_pairs_arms_by_seed_and_needs_two_seeds():
    s = pd.DataFrame({"arm": ["A", "A", "B", "B"], "seed": [0, 1, 1, 0], "m": [1.0, 2.0, 2.5, 1.2]})
    v = judge(claim(), s)
    assert v.values == pytest.approx([0.2, 0.5])  # seed 0: 1.2 - 1.0, seed 1: 2.5 - 2.0
    assert v.mean == pytest.approx(0.35)
    one = judge(claim(), s[s["seed"] == 0])
    assert one.verdict == "inconclusive" and math.isinf(one.high)
    with pytest.raises(ValueError, match="margin"):
        Claim("c", "t", "s", metric="m", arm="B", direction=0)


def test_a_stored_result_reads_back_whole(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "STORE", tmp_path)
    s = pd.DataFrame({"arm": ["A", "B"], "seed": [0, 0], "m": [0.25, 0.5]})
    c = pd.DataFrame({"arm": ["A", "A"], "seed": [0, 0], "step": [1, 2], "entropy": [1.5, 1.25]})
    path = results.store(Result("toy", s, c, [claim()], {"steps": 2}), command="pytest")
    back = results.load("toy")
    assert back.meta["steps"] == 2 and back.meta["command"] == "pytest"
    assert {"commit", "versions", "date", "cores"} <= back.meta.keys()
    pd.testing.assert_frame_equal(back.summaries, s)
    assert back.curves["entropy"].tolist() == [1.5, 1.25] and back.claims == [claim()]
    assert json.loads(path.read_text())["claims"][0]["arm"] == "B"
    with pytest.raises(FileNotFoundError, match="run_experiment.py missing"):
        results.load("missing")


@pytest.mark.parametrize(
    "values, want",
    [
        ([1.2e-8, 3.7e-9, 0.0, 2.2e-8, 7.5e-9], "reproduced"),  # float32 rounding, some spread
        ([1.5e-8] * 5, "reproduced"),  # no spread: t's interval is undefined, the mean decides
        ([0.0] * 5, "reproduced"),
        ([2e-5] * 5, "not reproduced"),
        ([1e-8, 1e-8, math.inf, 1e-8, 1e-8], "inconclusive"),  # a NaN/inf difference never passes
    ],
)
def test_tiny_differences_keep_their_size_and_verdict_through_the_store(
    values, want, tmp_path, monkeypatch
):
    monkeypatch.setattr(results, "STORE", tmp_path)
    parity = Claim("p", "A equals B", "s", metric="max |diff|", arm="A", direction=0, margin=1e-5)
    s = pd.DataFrame({"arm": ["A"] * 5, "seed": range(5), "max |diff|": values})
    results.store(Result("tiny", s, pd.DataFrame(), [parity], {}), command="pytest")
    back = results.load("tiny")
    # stored to six significant digits, not six decimal places (which made 1.2e-8 a 0.0)
    assert back.summaries["max |diff|"].tolist() == pytest.approx(values, rel=1e-6)
    assert back.summaries["seed"].tolist() == list(range(5))
    (v,) = back.verdicts()
    assert v.verdict == want
    if math.isfinite(max(values)):
        assert all(math.isfinite(x) for x in (v.mean, v.low, v.high))
        assert v.low <= v.mean <= v.high


def test_outcomes_round_trip_and_arms_have_folder_names():
    out = Outcome({"acc": 0.5}, pd.DataFrame({"step": [1], "entropy": [0.5]}), seconds=2.5)
    back = Outcome.from_json(out.to_json())
    assert back.summary == out.summary and back.curves.equals(out.curves)
    assert back.seconds == 2.5
    assert slug("+ clip-higher") == "clip-higher"


def test_the_meta_keeps_the_runs_own_seconds_when_they_are_read_back(tmp_path, monkeypatch):
    import pool_jobs  # tests/pool_jobs.py: two runs that take half a second each

    monkeypatch.setenv("LABKIT_RUNS", str(tmp_path / "runs"))
    monkeypatch.setattr(results, "STORE", tmp_path)
    exp, kw = pool_jobs.EXPERIMENT, {"workers": 1, "progress": False}
    done = [tmp_path / "runs" / "naps" / "nap" / f"seed-{s}" / "outcome.json" for s in (0, 1)]
    first = exp.run(seeds=(0,), **kw).meta
    kept = json.loads(done[0].read_text())["seconds"]  # the run's own, beside its log
    assert first["runs_read_back"] == 0 and first["runs_s"] == kept >= 0.5  # it sleeps 0.5 s
    assert first["runs_s"] <= first["wall_s"]  # the call's wall time holds the run's
    half = exp.run(**kw).meta  # seed 0 read back, seed 1 run now
    both = sum(json.loads(f.read_text())["seconds"] for f in done)
    assert half["runs_read_back"] == 1 and half["runs_s"] == pytest.approx(both)
    again = exp.run(**kw)  # every run read back: wall_s is the read-back's, runs_s the runs'
    assert again.meta["runs_read_back"] == 2 and again.meta["runs_s"] == half["runs_s"] >= 1.0
    results.store(again, command="pytest")
    text = measured_section(results.load("naps"))
    assert f"(2 of 2 runs read back from an earlier call), runs {half['runs_s']} s summed" in text
    # an outcome.json written before the runs' seconds were kept: no sum, and the text says so
    old = json.loads(done[1].read_text())
    done[1].write_text(json.dumps({k: v for k, v in old.items() if k != "seconds"}))
    back = exp.run(**kw)
    assert back.meta["runs_s"] is None and back.summaries["m"].tolist() == [0.0, 1.0]
    assert "runs ? s summed" in measured_section(back)


def test_a_result_stored_before_the_runs_seconds_were_kept_renders_as_before():
    old = results.load("prm")  # stored without runs_s (lab 95)
    assert "runs_s" not in old.meta
    assert f"cores, {old.meta['wall_s']} s. Means over seeds" in measured_section(old)


ARMS, SEEDS, STEPS = ["naive GRPO", "+ clip-higher"], (0, 1), 6
KW = {"fast": True, "arms": ARMS, "seeds": SEEDS, "steps": STEPS, "progress": False}


def folders(root):
    return [root / "dapo-fast" / slug(a) / f"seed-{s}" for a in ARMS for s in SEEDS]


def kill_midway(root) -> None:
    """Start the many-seed run in a new process group; SIGKILL it, workers and all, once one
    run has a checkpoint and not every run has finished."""
    code = f"from labkit.experiments import dapo\ndapo.EXPERIMENT.run(**{KW!r}, workers=2)"
    env = {**os.environ, "LABKIT_RUNS": str(root)}
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and proc.poll() is None:
            done = [(f / "outcome.json").exists() for f in folders(root)]
            saved = any(checkpoint.steps(f) for f in folders(root))
            if saved and not all(done):
                break
            time.sleep(0.2)
        assert proc.poll() is None, "the run ended before it could be killed"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.mark.slow
@pytest.mark.training
def test_a_killed_many_seed_run_resumes_every_seed_as_if_never_stopped(tmp_path, monkeypatch):
    killed, solo = tmp_path / "killed", tmp_path / "solo"
    kill_midway(killed)
    assert not all((f / "outcome.json").exists() for f in folders(killed))
    monkeypatch.setenv("LABKIT_RUNS", str(killed))
    resumed = dapo.EXPERIMENT.run(**KW, workers=2)  # the same call, started again
    monkeypatch.setenv("LABKIT_RUNS", str(solo))
    torch.set_num_threads(1)  # the workers' thread count: seed k computes what it computes solo
    ref = dapo.EXPERIMENT.run(**KW, workers=1)
    for f in folders(killed):
        m = load_run(f).metrics
        assert m["step"].tolist() == list(range(1, STEPS + 1)), f  # each step once
        assert load_run(f).config["seed"] == int(f.name.split("-")[1])  # not another seed's
    key = ["arm", "seed", "step"]
    a, b = resumed.curves.sort_values(key), ref.curves.sort_values(key)
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True))
    pd.testing.assert_frame_equal(resumed.summaries, ref.summaries)


def test_labkit_workers_caps_the_worker_processes(monkeypatch):
    from labkit.experiments.pool import default_workers

    monkeypatch.setenv("LABKIT_WORKERS", "1")
    assert default_workers(8) == 1
    monkeypatch.setenv("LABKIT_WORKERS", "3")
    assert default_workers(8) == 3 and default_workers(2) == 2
    monkeypatch.delenv("LABKIT_WORKERS")
    assert default_workers(64) == (os.cpu_count() or 1)


def alive(pid: int) -> bool:
    try:
        state = pathlib.Path(f"/proc/{pid}/stat").read_text().split()[2]
    except FileNotFoundError:
        return False
    return state != "Z"  # a zombie has exited


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_sigterm_to_the_parent_stops_its_worker_processes(tmp_path):
    code = (
        "from labkit.experiments.pool import Job, exit_on_sigterm, run_jobs\n"
        "import pool_jobs\n"
        "exit_on_sigterm()\n"
        f"jobs = [Job(pool_jobs.sleeper, {{'folder': {str(tmp_path)!r}, 'seconds': 120}}, str(i))"
        " for i in range(2)]\n"
        "run_jobs(jobs, workers=2, progress=False)\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(pathlib.Path(__file__).parent), os.environ.get("PYTHONPATH", "")]
        ),
    }
    proc = subprocess.Popen([sys.executable, "-c", code], env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while len(list(tmp_path.glob("*.pid"))) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        workers = [int(p.stem) for p in tmp_path.glob("*.pid")]
        assert len(workers) == 2 and all(alive(w) for w in workers)
        proc.send_signal(signal.SIGTERM)  # the parent only, as `kill <pid>` does
        assert proc.wait(timeout=60) == 128 + signal.SIGTERM
        deadline = time.monotonic() + 30
        while any(alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(alive(w) for w in workers), "a worker outlived its parent"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
