"""Every lab runs headless, top to bottom, in fast mode (LABKIT_FAST=1).

The labs of one test process share one kernel, started once: torch, transformers and labkit
are imported once per process instead of once per lab (~10 s a lab at one thread, about a
quarter of the notebook tier). Before each lab a prelude empties the kernel's namespace
(``%reset -f``: a lab that forgets an import still fails), moves to ``labs/`` and points
``LABKIT_RUNS`` at the test's own folder. A lab that fails takes the kernel with it: the next
lab starts a fresh one. ``LABKIT_NB_FRESH_KERNEL=1`` gives every lab its own kernel, as Run All
in a new JupyterLab session does.
"""

import os
import pathlib

import nbformat
import pytest
from jupyter_core.utils import run_sync
from nbclient import NotebookClient

LABS_DIR = pathlib.Path(__file__).parent.parent / "labs"
LABS = sorted(LABS_DIR.glob("*.ipynb"))
FRESH = os.environ.get("LABKIT_NB_FRESH_KERNEL") == "1"


class SharedKernel:
    """One ipykernel (and its client) for the labs of this process, restarted after a lab fails."""

    def __init__(self):
        self.km = self.kc = None

    def client(self, nb, **options) -> NotebookClient:
        client = NotebookClient(nb, km=self.km, **options)
        if self.km is None:
            client.km = client.create_kernel_manager()
            client.start_new_kernel(cwd=str(LABS_DIR))
            client.start_new_kernel_client()
            self.km, self.kc = client.km, client.kc
        client.owns_km, client.kc = False, self.kc
        return client

    def discard(self):
        if self.km is not None:
            self.kc.stop_channels()
            run_sync(self.km.shutdown_kernel)(now=True)
            self.km = self.kc = None


@pytest.fixture(scope="module")
def kernel():
    shared = SharedKernel()
    yield shared
    shared.discard()


def prelude(runs: pathlib.Path) -> str:
    """What a fresh kernel would have: an empty namespace (with the module attributes
    ``%reset`` removes and a process pool needs), ``labs/`` as the working folder, fast mode and
    a runs folder of the test's own."""
    return "\n".join(
        [
            "%reset -f",
            "__loader__ = __package__ = __spec__ = None  # as a fresh kernel has them",
            "import os",
            f"os.chdir({str(LABS_DIR)!r})",
            "os.environ['LABKIT_FAST'] = '1'",
            f"os.environ['LABKIT_RUNS'] = {str(runs)!r}",
            "del os",
        ]
    )


@pytest.mark.slow
@pytest.mark.parametrize("path", LABS, ids=[p.name for p in LABS])
def test_lab_runs_in_fast_mode(path, tmp_path, monkeypatch, kernel):
    monkeypatch.setenv("LABKIT_FAST", "1")
    monkeypatch.setenv("LABKIT_RUNS", str(tmp_path / "runs"))
    nb = nbformat.read(path, as_version=4)
    options = {
        "timeout": 600,
        "kernel_name": "python3",
        "store_widget_state": False,
        "resources": {"metadata": {"path": str(path.parent)}},
    }
    if FRESH:
        NotebookClient(nb, **options).execute()
        return
    nb.cells.insert(0, nbformat.v4.new_code_cell(prelude(tmp_path / "runs")))
    try:
        kernel.client(nb, **options).execute(cleanup_kc=False)
    except BaseException:
        kernel.discard()
        raise


def test_labs_committed_without_outputs():
    for path in LABS:
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert not cell.outputs, f"{path.name}: strip outputs before committing"
                assert len(cell.source.splitlines()) <= 15, f"{path.name}: a code cell > 15 lines"
