"""CodeEditor without a browser: the messages the front end sends reach Python, the shipped
bundle is the build of the locked packages, and every bundled package's licence is recorded.

The browser half (highlighting, auto-indent, the marked line, the shortcut) is in
tests/test_browser.py.
"""

import json
import pathlib
import re
import shutil
import subprocess

import pytest

from labkit.widgets.code_editor import BUNDLE, CodeEditor

ROOT = pathlib.Path(__file__).parent.parent
LICENSES = BUNDLE.with_name("code_editor.LICENSES.txt")


def _from_front_end(widget, data: dict) -> None:
    """Deliver a comm message as the browser's widget manager sends it."""
    widget._handle_msg({"content": {"data": data}, "buffers": []})


def test_edits_and_the_shortcut_from_the_front_end_reach_python():
    ed = CodeEditor(value="x = 1\n")
    seen = []
    ed.on_run(lambda: seen.append(ed.value))
    _from_front_end(ed, {"method": "update", "state": {"value": "x = 2\n"}})
    assert ed.value == "x = 2\n"
    # the shortcut's message carries the code: value updates held back by the front end's
    # throttle must not make Try run stale code
    _from_front_end(ed, {"method": "custom", "content": {"event": "run", "value": "x = 3\n"}})
    assert seen == ["x = 3\n"] and ed.value == "x = 3\n"
    _from_front_end(ed, {"method": "custom", "content": {"event": "other"}})
    assert seen == ["x = 3\n"]


def test_mark_error_sets_and_clears_the_line():
    ed = CodeEditor(value="a\nb\n")
    ed.mark_error(2, "bad")
    assert (ed.error_line, ed.error_message) == (2, "bad")
    ed.mark_error(None)
    assert (ed.error_line, ed.error_message) == (0, "")


def test_the_widget_ships_the_bundle_and_names_its_packages_and_licences():
    ed = CodeEditor()
    assert ed._esm == BUNDLE.read_text()
    head = BUNDLE.read_text()[:2000]
    bundled = re.search(r"Contains (.*?); each MIT-licensed", head, re.DOTALL).group(1).split(", ")
    lock = json.loads((ROOT / "js" / "package-lock.json").read_text())["packages"]
    text = LICENSES.read_text()
    for entry in bundled:
        name, version = entry.rsplit("@", 1)
        assert lock[f"node_modules/{name}"]["version"] == version, entry  # built from the lock
        assert f"{entry} (MIT)" in text and "Permission is hereby granted" in text
    assert {"codemirror", "@codemirror/lang-python", "@codemirror/view"} <= {
        e.rsplit("@", 1)[0] for e in bundled
    }
    assert BUNDLE.stat().st_size < 400_000  # small: one ES module, no plotly-sized bundle


@pytest.mark.skipif(
    shutil.which("node") is None or not (ROOT / "js" / "node_modules").is_dir(),
    reason="needs node and js/node_modules (scripts/build_editor.sh installs them)",
)
def test_the_shipped_bundle_is_what_the_build_script_makes(tmp_path):
    subprocess.run(["node", str(ROOT / "js" / "build.mjs"), str(tmp_path)], check=True)
    for name in ("code_editor.js", "code_editor.LICENSES.txt"):
        assert (tmp_path / name).read_bytes() == (BUNDLE.parent / name).read_bytes(), name
