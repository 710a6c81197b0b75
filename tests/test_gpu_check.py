"""The GPU check's script (scripts/gpu_check.sh, README "GPU check") run as a dry run on this CPU:
every phase ends ok, every gpu test is skipped with the reason that names CUDA, the benchmark
and lab 51's branch write their rows; and what the carried folder is made of."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import gpu_check  # scripts/ is not a package: found through sys.path
import gpu_check_carry


@pytest.mark.slow
def test_the_dry_run_of_the_gpu_check_passes_on_the_cpu(tmp_path):
    env = {**os.environ, "OUT": str(tmp_path), "PYTHON": sys.executable}
    env.update(GPU_CARRY=str(tmp_path / "no-carry"), LABKIT_RUNS=str(tmp_path / "runs"))
    script = ROOT / "scripts" / "gpu_check.sh"
    cmd = ["bash", str(script), "--cpu"]
    proc = subprocess.run(cmd, check=False, env=env, capture_output=True, timeout=600)
    d = json.loads((tmp_path / "gpu_check.json").read_text())
    status = {n: (p["status"], p.get("seconds")) for n, p in d["phases"].items()}
    assert proc.returncode == 0, (status, proc.stdout.decode()[-3000:])
    assert d["mode"] == "cpu" and d["install"].startswith("no ")
    assert {n: s for n, (s, _) in status.items()} == dict.fromkeys(gpu_check.LIMITS, "ok")
    rows = d["tests"]["rows"]
    assert len(rows) >= 30 and d["tests"]["counts"] == {"skipped": len(rows)}
    assert all("needs CUDA: torch.cuda.is_available() is False" in r["message"] for r in rows)
    bench = {(r["policy"], r.get("trainer")): r for r in d["benchmark"]}
    for policy in ("tiny", "smollm2-135m"):
        assert bench[policy, "labkit"]["step_s"] > 0 and bench[policy, "TRL"]["step_s"] > 0
        assert bench[policy, None]["labkit_over_trl_step_s"] > 0
    lab = d["lab51"][-1]  # a row when built, then one per step
    assert [r["steps_done"] for r in d["lab51"]] == [0, 1, 2]
    assert lab["s_per_step"] > 0 and lab["precision"] == "fp32" and lab["B"] == 4
    assert d["env"]["packages"]["labkit"]["from"] == str(ROOT)  # this tree, not an install


def test_the_gpu_tests_are_found_and_the_dry_run_test_is_not_among_them():
    files = gpu_check.gpu_test_files()
    assert "tests/test_gpu_algos.py" in files and "tests/test_gpu_resume.py" in files
    assert "tests/test_gpu_check.py" not in files  # it would run the check inside the check


def test_every_carried_wheel_has_labkits_pinned_version():
    pins = gpu_check_carry.pinned()
    assert set(pins) == set(gpu_check_carry.WHEELS)
    constraints = (ROOT / "constraints.txt").read_text()
    for name in ("transformers", "peft", "trl", "plotly", "datasets", "math-verify", "pebble"):
        assert f"{name}=={pins[name]}" in constraints


def test_a_phase_past_its_limit_is_killed_and_reported(tmp_path):
    results = gpu_check.Results(tmp_path, "cpu", "not run", 0.0)
    with open(tmp_path / "log", "a") as log:
        sleepy = [sys.executable, "-c", "import time; print('started', flush=True); time.sleep(60)"]
        hung = gpu_check.run_phase(sleepy, 1.0, log, results)
        done = gpu_check.run_phase([sys.executable, "-c", "pass"], 30.0, log, results)
    assert hung["status"] == "timeout" and hung["seconds"] < 10
    assert done["status"] == "ok" and done["seconds"] < 10
    assert "started" in (tmp_path / "log").read_text()
