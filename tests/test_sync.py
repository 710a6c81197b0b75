"""scripts/_sync.py: the write-or-check loop of the doc generators, on files in a temp folder;
and a generator loaded by its file path (as the tests load them) still imports it."""

from __future__ import annotations

import importlib.util
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_sync = _load("_sync")


def _files(tmp_path):
    fresh, old, missing = tmp_path / "a.md", tmp_path / "b.md", tmp_path / "sub" / "c.md"
    fresh.write_text("same\n")
    old.write_text("old\n")
    return {fresh: "same\n", old: "new\n", missing: "made\n"}


def test_check_names_each_stale_or_missing_file_and_writes_nothing(tmp_path, capsys):
    files = _files(tmp_path)
    assert _sync.stale(files) == list(files)[1:]
    assert _sync.sync(files, check=True, script="scripts/x.py", root=tmp_path) == 1
    assert capsys.readouterr().out.splitlines() == [
        "b.md is stale: run python scripts/x.py",
        f"{pathlib.Path('sub', 'c.md')} is stale: run python scripts/x.py",
    ]
    assert (tmp_path / "b.md").read_text() == "old\n"
    assert not (tmp_path / "sub").exists()


def test_write_mode_writes_only_the_stale_files_then_check_passes(tmp_path, capsys):
    files = _files(tmp_path)
    before = (tmp_path / "a.md").stat().st_mtime_ns
    assert _sync.sync(files, check=False, script="s", root=tmp_path, wrote=": 3 rows") == 0
    assert capsys.readouterr().out.splitlines() == [
        "wrote b.md: 3 rows",
        f"wrote {pathlib.Path('sub', 'c.md')}: 3 rows",
    ]
    assert all(p.read_text() == text for p, text in files.items())
    assert (tmp_path / "a.md").stat().st_mtime_ns == before  # an up-to-date file is not rewritten
    assert _sync.sync(files, check=True, script="s", root=tmp_path) == 0
    assert capsys.readouterr().out == ""  # silent unless asked to name the fresh ones
    assert _sync.sync(files, check=True, script="s", root=tmp_path, say_fresh=True) == 0
    assert capsys.readouterr().out.count("is up to date") == 3


def test_a_generator_loaded_by_path_imports_the_helper():
    assert _load("gpu_report").sync.__module__ == "_sync"
