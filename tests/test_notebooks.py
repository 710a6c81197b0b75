"""Every lab runs headless, top to bottom, in fast mode (LABKIT_FAST=1)."""

import pathlib

import nbformat
import pytest
from nbclient import NotebookClient

LABS = sorted((pathlib.Path(__file__).parent.parent / "labs").glob("*.ipynb"))


@pytest.mark.slow
@pytest.mark.parametrize("path", LABS, ids=[p.name for p in LABS])
def test_lab_runs_in_fast_mode(path, tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_FAST", "1")
    monkeypatch.setenv("LABKIT_RUNS", str(tmp_path / "runs"))
    nb = nbformat.read(path, as_version=4)
    NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        store_widget_state=False,
        resources={"metadata": {"path": str(path.parent)}},
    ).execute()


def test_labs_committed_without_outputs():
    for path in LABS:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert not cell.outputs, f"{path.name}: strip outputs before committing"
                assert len(cell.source.splitlines()) <= 15, f"{path.name}: a code cell > 15 lines"
