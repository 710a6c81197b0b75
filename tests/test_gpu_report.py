"""The README's "GPU check, measured" section and docs/gpu_check/RESULTS.md are generated from
the stored GPU check runs (scripts/gpu_report.py): a figure typed by hand or a stored run without
its regeneration fails here."""

from __future__ import annotations

import importlib.util
import json
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("gpu_report", ROOT / "scripts" / "gpu_report.py")
gpu_report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gpu_report)


def test_the_readme_and_results_match_the_stored_runs():
    found = gpu_report.checks()
    assert found, "no stored GPU check under docs/gpu_check/"
    assert gpu_report.README.read_text() == gpu_report.readme_text(found), (
        "README.md's GPU section is stale: run python scripts/gpu_report.py"
    )
    assert gpu_report.RESULTS.read_text() == gpu_report.results_md(found), (
        "docs/gpu_check/RESULTS.md is stale: run python scripts/gpu_report.py"
    )


def test_a_later_run_replaces_a_tests_row_and_a_renamed_test():
    check = {
        "runs": [
            {
                "name": "a",
                "tests": [
                    {"test": "f.py::t[x]", "outcome": "failed"},
                    {"test": "f.py::old[y]", "outcome": "failed"},
                ],
            },
            {
                "name": "b",
                "replaces": {"f.py::old": "f.py::new"},
                "tests": [{"test": "f.py::t[x]", "outcome": "passed"}],
            },
        ]
    }
    rows = gpu_report.latest_tests(check)
    assert {t: (run, r["outcome"]) for t, (run, r) in rows.items()} == {
        "f.py::t[x]": ("b", "passed")
    }
    assert gpu_report.first_outcomes(check) == "a: 2 failed; b: 1 passed"
    assert json.dumps(gpu_report.fmt({"w": [1.23456, 2]})) == '"w [1.23, 2]"'
