"""Labs a teacher can open: in JupyterLab (headless Chromium, 1366 x 768), Run All on a lab that
opens on its stored result draws its first figure, with no error shown up to then. That figure
comes from the stored result, ahead of the "run it yourself" cell (tests/test_results_tables.py
checks the order; the browser may still be drawing it when the kernel, cells ahead, has started
training). The rest of each lab runs once, headless, in tests/test_notebooks.py. The seconds
from Run All to the first figure go to runs/browser/labs.txt (the README quotes a quiet
machine's; the aim is under 30 s); tests never assert wall time, so the wait for the figure only
guards against a hang."""

from __future__ import annotations

import time

import pytest
from lab_server import ROOT, TOKEN, chromium_page, serve
from test_browser import ARTIFACTS, ERRORS, KERNEL_IDLE

LABS = ["77_dapo_ablation", "90_r1_zero_aha", "60_tools_and_turns"]
"""Labs that open on a stored result (``lk.experiments.load``)."""
FIRST_FIGURE = """() => document.querySelectorAll('.jp-OutputArea-output .js-plotly-plot').length"""
RUN_ALL = "() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); return 1; }"
"""Run All, not waiting for it: the command's promise ends with the last cell."""

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("name", LABS)
def test_a_lab_draws_its_stored_result_within_30_seconds_of_run_all(name, tmp_path):
    with (
        serve(tmp_path, [ROOT / "labs" / f"{name}.ipynb"]) as base,
        chromium_page(tmp_path) as page,
    ):
        page.goto(f"{base}/lab/tree/{name}.ipynb?token={TOKEN}")
        page.wait_for_function(KERNEL_IDLE, timeout=120_000)
        t0 = time.monotonic()
        page.evaluate(RUN_ALL)
        page.wait_for_function(f"() => ({FIRST_FIGURE})() > 0", timeout=300_000, polling=100)
        first = time.monotonic() - t0
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        with open(ARTIFACTS / "labs.txt", "a") as f:
            f.write(f"{name}: first figure {first:.1f} s after Run All\n")
        assert page.evaluate(ERRORS) == []
