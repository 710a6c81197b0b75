"""A real client: JupyterLab on localhost, headless Chromium driven by Playwright.

Opens a copy of labs/00_quickstart.ipynb, runs all cells through JupyterLab's own command, clicks
the dashboard's Start and sees the reward chart gain points, pauses, types a broken reward into
the editor and sees its error, types a valid one, applies it, resumes (the new reward function
shows up as a trace and the switch as a line), stops. Screenshots go to test-artifacts/browser/.

Needs Debian's chromium at /usr/bin/chromium (``make test`` installs it when it can) and the
``playwright`` package (dev extra); otherwise the test is skipped, saying why.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).parent.parent
CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = ROOT / "test-artifacts" / "browser"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SETTINGS = {  # no news/update checks, no autosave, every cell rendered (no windowing)
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}
BROKEN = "def broken(completions, **kwargs):\n    return [1.0]\n"
VALID = (
    "def short_and_right(completions, answer, **kwargs):\n"
    "    return [float(c.strip() == a) for c, a in zip(completions, answer)]\n"
)

pytestmark = pytest.mark.slow


def _require():
    if not pathlib.Path(CHROMIUM).exists():
        pytest.skip(
            f"{CHROMIUM} is missing: `make test` installs Debian's chromium when run as "
            "root with apt-get; otherwise `apt-get install chromium fonts-liberation`"
        )
    pytest.importorskip(
        "playwright.sync_api",
        reason="playwright is not installed: pip install -c constraints.txt -e '.[dev]'",
    )
    pytest.importorskip("jupyterlab", reason="jupyterlab is not installed (the lab extra)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def lab(tmp_path):
    """A JupyterLab server on a free port, serving a copy of the quickstart; yields its URL."""
    _require()
    work, settings = tmp_path / "work", tmp_path / "settings"
    work.mkdir()
    shutil.copy(ROOT / "labs" / "00_quickstart.ipynb", work)
    for name, value in SETTINGS.items():
        f = settings / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(value))
    port, token = _free_port(), "labkit-test"
    env = {
        **os.environ,
        "LABKIT_FAST": "1",
        "LABKIT_RUNS": str(tmp_path / "runs"),
        "OMP_NUM_THREADS": "1",
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
    }
    log = open(tmp_path / "jupyter.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter",
            "lab",
            "--no-browser",
            f"--port={port}",
            "--ip=127.0.0.1",
            f"--ServerApp.token={token}",
            "--allow-root",
            "--LabApp.expose_app_in_browser=True",
            f"--ServerApp.root_dir={work}",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("JupyterLab did not start: " + (tmp_path / "jupyter.log").read_text())
        yield f"{base}/lab/tree/00_quickstart.ipynb?token={token}"
    finally:
        proc.terminate()  # the server shuts its kernels down
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


KERNEL_IDLE = """() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.status === 'idle'; }"""
ALL_RAN = """() => { const w = window.jupyterapp.shell.currentWidget;
  const k = w.sessionContext.session.kernel;
  const cells = w.content.widgets.filter(c => c.model.type === 'code');
  return k.status === 'idle' && cells.every(c => c.model.executionCount !== null); }"""
ERRORS = """() => window.jupyterapp.shell.currentWidget.content.widgets
  .filter(c => c.model.type === 'code')
  .flatMap(c => c.model.sharedModel.outputs || [])
  .filter(o => o.output_type === 'error').map(o => o.ename + ': ' + o.evalue)"""
PLOT = "document.querySelector('.lk-dashboard .js-plotly-plot')"


def _points(page) -> int:
    return page.evaluate(
        f"() => {{ const p = {PLOT}; return p && p.data ? p.data[0].x.length : -1; }}"
    )


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=False)


def _wait_text(page, selector: str, text: str, timeout: float = 60_000) -> str:
    page.wait_for_function(
        "([s, t]) => { const e = document.querySelector(s); return e && e.innerText.includes(t); }",
        arg=[selector, text],
        timeout=timeout,
    )
    return page.inner_text(selector)


def test_dashboard_and_reward_editor_in_jupyterlab(lab, tmp_path):
    from playwright.sync_api import sync_playwright

    shutil.rmtree(ARTIFACTS, ignore_errors=True)  # screenshots of this run only
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(tmp_path / "chromium"),
            executable_path=CHROMIUM,
            args=ARGS,
            headless=True,
            viewport={"width": 1500, "height": 1000},
        )
        try:
            page = ctx.pages[0] if ctx.pages else ctx.new_page()
            page.set_default_timeout(120_000)
            page.goto(lab)
            page.wait_for_function(KERNEL_IDLE, timeout=120_000)
            _shot(page, "0-opened")
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
            page.wait_for_function(ALL_RAN, timeout=300_000, polling=500)
            assert page.evaluate(ERRORS) == []
            page.locator(".lk-dashboard .js-plotly-plot").first.wait_for()
            page.locator(".lk-dashboard").scroll_into_view_if_needed()
            n0 = _points(page)
            assert n0 >= 1, "the dashboard's reward chart shows the steps already trained"
            _shot(page, "1-all-cells-ran")

            page.click(".lk-dashboard .lk-start")
            _wait_text(page, ".lk-dashboard .lk-status", "running")
            page.wait_for_function(f"n => {PLOT}.data[0].x.length >= n + 2", arg=n0, polling=250)
            page.click(".lk-dashboard .lk-pause")
            _wait_text(page, ".lk-dashboard .lk-status", "paused")
            n1 = _points(page)
            assert n1 >= n0 + 2
            _shot(page, "2-trained-then-paused")

            editor = page.locator(".lk-reward-editor")
            editor.scroll_into_view_if_needed()
            editor.locator("textarea").fill(BROKEN)
            editor.locator(".lk-try").click()
            msg = _wait_text(page, ".lk-reward-message", "✗")
            assert "returned 1 values for" in msg, msg
            _shot(page, "3-broken-reward")

            editor.locator("textarea").fill(VALID)
            editor.locator(".lk-try").click()
            _wait_text(page, ".lk-reward-message", "✓ short_and_right")
            editor.locator(".lk-apply-reward").click()
            _wait_text(page, ".lk-reward-message", "applied short_and_right")
            _shot(page, "4-valid-reward-applied")
            editor.locator(".lk-reward-tabs .lm-TabBar-tab", has_text="Reward bench").click()
            editor.locator(".lk-bench").click()
            _wait_text(page, ".lk-reward-message", "reward_bench(short_and_right)")
            _wait_text(page, ".lk-bench-table", "reward_bench(short_and_right)")
            _shot(page, "4b-reward-bench-tab")

            page.locator(".lk-dashboard").scroll_into_view_if_needed()
            n2 = _points(page)
            page.click(".lk-dashboard .lk-resume")
            page.wait_for_function(f"n => {PLOT}.data[0].x.length >= n + 2", arg=n2, polling=250)
            names = page.evaluate(f"() => {PLOT}.data.map(t => t.name)")
            assert "short_and_right" in names, names
            assert page.evaluate(f"() => ({PLOT}.layout.shapes || []).length") > 0
            page.click(".lk-dashboard .lk-stop")
            _wait_text(page, ".lk-dashboard .lk-status", "stopped")
            n3 = _points(page)
            time.sleep(1.5)
            assert _points(page) == n3, "no step after Stop"
            _shot(page, "5-resumed-and-stopped")
        except Exception:
            _shot(page, "failure")
            raise
        finally:
            ctx.close()
