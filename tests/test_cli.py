"""The main job, ``python -m labkit demo``, end to end on a short run."""

import subprocess
import sys

import pytest

import labkit as lk


@pytest.mark.slow  # 3 GRPO steps and the HTML report, in a new process
def test_demo_prints_accuracy_last_and_writes_report(tmp_path):
    out = tmp_path / "demo"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "labkit",
            "demo",
            "--steps",
            "3",
            "--out",
            str(out),
            "--num-generations",
            "4",
            "--prompts-per-step",
            "4",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    last = proc.stdout.strip().splitlines()[-1]
    assert last.startswith("accuracy: ") and last.endswith(" (held-out, sampled)")
    before, after = last.split()[1], last.split()[3]
    assert len(before.split(".")[1]) == 2 and len(after.split(".")[1]) == 2
    assert (out / "report.html").stat().st_size > 1e6  # plotly.js embedded: opens offline
    assert list(lk.load_run(out).metrics["step"]) == [1, 2, 3]


def test_demo_refuses_bad_input_in_one_line(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "labkit",
            "demo",
            "--num-generations",
            "1",
            "--out",
            str(tmp_path / "x"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("error: num_generations=1")
