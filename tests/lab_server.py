"""A JupyterLab server for the browser tests: on a free port, serving copies of given labs,
with news/update checks and autosave off, the kernel importing this checkout's labkit (a last
cell asserts it), ``LABKIT_FAST=1`` and a scratch runs folder. Skips, saying why, without
Debian's chromium, playwright or jupyterlab."""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).parent.parent
CHROMIUM = "/usr/bin/chromium"
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
TOKEN = "labkit-test"


def require() -> None:
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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def checked_copy(lab: pathlib.Path, work: pathlib.Path) -> None:
    """``lab`` copied into ``work`` with a last cell asserting the kernel runs this checkout's
    labkit (PYTHONPATH is passed on)."""
    nb = json.loads(lab.read_text())
    nb["cells"].append(
        {
            "cell_type": "code",
            "id": "labkit-checkout",
            "metadata": {},
            "execution_count": None,
            "outputs": [],
            "source": "import pathlib\nimport labkit\n"
            f"assert pathlib.Path(labkit.__file__).resolve().is_relative_to("
            f"{str(ROOT.resolve())!r}), labkit.__file__",
        }
    )
    (work / lab.name).write_text(json.dumps(nb))


@contextlib.contextmanager
def serve(tmp_path: pathlib.Path, labs: list[pathlib.Path]):
    """Yield the server's base URL (append ``/lab/tree/<name>?token=`` + :data:`TOKEN`)."""
    require()
    work, settings = tmp_path / "work", tmp_path / "settings"
    work.mkdir()
    for lab in labs:
        checked_copy(lab, work)
    for name, value in SETTINGS.items():
        f = settings / name
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(json.dumps(value))
    port = free_port()
    env = {
        **os.environ,
        "LABKIT_FAST": "1",
        "LABKIT_RUNS": str(tmp_path / "runs"),
        "OMP_NUM_THREADS": "1",
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / "workspaces"),
    }
    cmd = [
        sys.executable,
        "-m",
        "jupyter",
        "lab",
        "--no-browser",
        f"--port={port}",
        "--ip=127.0.0.1",
        f"--ServerApp.token={TOKEN}",
        "--allow-root",
        "--LabApp.expose_app_in_browser=True",
        f"--ServerApp.root_dir={work}",
    ]
    log = open(tmp_path / "jupyter.log", "w")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("JupyterLab did not start: " + (tmp_path / "jupyter.log").read_text())
        yield base
    finally:
        proc.terminate()  # the server shuts its kernels down
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@contextlib.contextmanager
def chromium_page(tmp_path: pathlib.Path):
    """A page of headless Chromium at 1366 x 768 (a fresh profile under ``tmp_path``), closed
    when the block ends."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(
            str(tmp_path / "chromium"),
            executable_path=CHROMIUM,
            args=ARGS,
            headless=True,
            viewport={"width": 1366, "height": 768},
        )
        try:
            yield ctx.pages[0] if ctx.pages else ctx.new_page()
        finally:
            ctx.close()
