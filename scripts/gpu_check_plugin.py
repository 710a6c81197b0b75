"""A pytest plugin for the GPU check (``-p gpu_check_plugin``, scripts/ on the path): each test's
outcome, duration, figures (``record_property``) and, when it did not pass, the end of its
report, appended to the JSON-lines file ``$GPU_CHECK_TESTS`` as the test ends. A run cut off by
its time limit still reports every test that finished."""

from __future__ import annotations

import json
import os

MESSAGE_CHARS = 1500  # the end of a failure's report: the assertion and its values


def _message(report) -> str:
    if report.outcome == "passed":
        return ""
    if report.skipped and isinstance(report.longrepr, tuple):
        return str(report.longrepr[2])  # (file, line, reason)
    return str(report.longreprtext)[-MESSAGE_CHARS:]


def pytest_runtest_logreport(report) -> None:
    path = os.environ.get("GPU_CHECK_TESTS")
    if not path or (report.when != "call" and report.outcome == "passed"):
        return  # one row per test: its call, or the setup/teardown that failed or skipped it
    row = {
        "test": report.nodeid,
        "when": report.when,
        "outcome": report.outcome,
        "seconds": round(report.duration, 3),
        "figures": {k: v for k, v in report.user_properties},
        "message": _message(report),
    }
    with open(path, "a") as f:
        f.write(json.dumps(row, default=str) + "\n")
