"""What tests share: an offline hub, a runs folder, fresh tiny and LoRA policies, the resume
helpers (an uninterrupted run against one stopped, or SIGKILLed, and resumed), and the ``gpu``
marker's skip where there is no CUDA."""

import copy
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch

# Tests never reach the hub: a name that is not built in or a folder fails at once.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import labkit as lk  # after the offline switches
from labkit.runs import checkpoint

NO_CUDA = (
    "needs CUDA: torch.cuda.is_available() is False here; `bash scripts/gpu_check.sh` runs the "
    "gpu tests on a GPU machine (README, GPU check)"
)


ON_CPU = os.environ.get("LABKIT_GPU_TESTS_ON_CPU") == "1"
"""A rehearsal of the gpu tests' own code on the CPU (``gpu_device`` is then the CPU, and a test
that needs a CUDA-only API skips, saying so): it checks the tests, never CUDA."""


TIERS = {
    "test_notebooks.py": "notebook",
    "test_browser": "browser",
    "test_smollm2": "real",
    "test_rewards_similarity": "real",
    "test_trl_rewards": "real",
}
"""A test module's tier by its file name; other ``slow`` tests are ``training``."""


def tier(item) -> str | None:
    name = item.path.name
    found = next((t for prefix, t in TIERS.items() if name.startswith(prefix)), None)
    if found is None and item.get_closest_marker("slow") is not None:
        return "training"
    return found


GROUPED = (
    "test_runs_resume.py",
    "test_smollm2.py",
    "test_envs.py",
    "test_evaluate_probe.py",
    "test_core_trl_parity.py",
    "test_prefix.py",
    "test_trl_rewards.py",
)
"""Modules whose tests share an expensive module fixture (runs trained once, a real model
loaded once): under ``pytest -n`` (``--dist loadgroup``) each stays on one worker."""

if os.environ.get("PYTEST_XDIST_WORKER"):  # one worker per core: one torch thread each
    torch.set_num_threads(1)
    # and so for what a test starts (notebook kernels, scripts): one thread, and an experiment's
    # runs in that process rather than in more worker processes (the cores are taken)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("LABKIT_WORKERS", "1")


def pytest_collection_modifyitems(config, items):
    """Every test gets its tier marker (``-m "not notebook"`` and so on: pyproject.toml lists
    them); tests marked ``gpu`` are skipped, with :data:`NO_CUDA` as the reason, where CUDA is
    not available (unless :data:`ON_CPU`)."""
    for item in items:
        t = tier(item)
        if t is not None and item.get_closest_marker(t) is None:
            item.add_marker(getattr(pytest.mark, t))
        if item.path.name in GROUPED:
            item.add_marker(pytest.mark.xdist_group(item.path.name))
    if torch.cuda.is_available() or ON_CPU:
        return
    skip = pytest.mark.skip(reason=NO_CUDA)
    for item in items:
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def gpu_device() -> torch.device:
    """Where a ``gpu`` test runs: cuda (the CPU in a rehearsal, :data:`ON_CPU`)."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


@pytest.fixture
def cuda_only(gpu_device):
    """``cuda_only(what)``: skip a rehearsal at a step that needs CUDA itself (memory
    statistics, the sync debug mode), naming it."""

    def check(what: str) -> None:
        if gpu_device.type != "cuda":
            pytest.skip(f"rehearsal on the CPU: {what} needs CUDA")

    return check


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """An empty runs folder; ``run_name=...`` writes below it (``$LABKIT_RUNS``)."""
    root = tmp_path / "runs"
    root.mkdir()
    monkeypatch.setenv("LABKIT_RUNS", str(root))
    return root


@pytest.fixture(scope="module")
def module_runs(tmp_path_factory):
    """One runs folder for a whole module, so a run made once is read by several tests."""
    with pytest.MonkeyPatch.context() as mp:
        root = tmp_path_factory.mktemp("runs")
        mp.setenv("LABKIT_RUNS", str(root))
        yield root


@pytest.fixture(scope="session")
def _tiny():
    return lk.load_policy("tiny")


@pytest.fixture
def tiny(_tiny):
    """``(model, tokenizer)`` of the shipped tiny policy, a fresh copy per test (trainers
    change it in place): a deep copy of one loaded model, ~3x faster than loading again."""
    model, tok = _tiny
    return copy.deepcopy(model), tok


@pytest.fixture
def lora(tiny):
    """``(peft model, tokenizer)``: the tiny policy with a LoRA adapter (r=4, alpha=8) on
    q_proj and v_proj; B = 0, so it starts as the tiny policy. A is drawn under seed 0, so the
    tests do not depend on their order."""
    model, tok = tiny
    torch.manual_seed(0)
    return lk.models.add_lora(model, r=4, alpha=8, target_modules=["q_proj", "v_proj"]), tok


def run_metrics(run):
    """A run's metrics without the wall-clock columns, ``time/*`` and ``rewards/<fn>/latency``
    (they never repeat)."""
    m = lk.load_run(run).metrics
    return m.drop(columns=[c for c in m.columns if c.startswith("time/") or c.endswith("/latency")])


class Resume:
    """Runs of one trainer class and config, to compare an uninterrupted run with one that was
    stopped (or killed) and resumed. ``kwargs`` must be literals (a killed run rebuilds them in a
    new process)."""

    metrics = staticmethod(run_metrics)

    @staticmethod
    def assert_same(a, b, steps: int) -> None:
        """Runs ``a`` and ``b`` logged the same metrics (but time), samples and token rows in
        steps 1..``steps`` (``b`` may have gone on)."""
        ma, mb = run_metrics(a), run_metrics(b).head(steps)
        assert list(mb["step"]) == list(range(1, steps + 1))
        assert ma.equals(mb), ma.compare(mb) if ma.shape == mb.shape else mb
        for kind in ("samples", "tokens"):
            fa, fb = (lk.load_run(r).frame(kind) for r in (a, b))
            fb = fb[fb["step"] <= steps].reset_index(drop=True) if len(fb) else fb
            assert fa.equals(fb), kind

    def __init__(self, cls, kwargs: dict, steps: int):
        self.cls, self.kwargs, self.steps = cls, kwargs, steps

    def straight(self, name: str):
        """``steps`` steps in one go."""
        self.cls(run_name=name, **self.kwargs).train(self.steps, progress=False)
        return lk.load_run(name)

    def stopped(self, name: str, at: int):
        """Stopped (``trainer.stop()``) after step ``at``, resumed with ``from_run``, finished."""
        tr = self.cls(run_name=name, **self.kwargs)
        tr.train(self.steps, progress=False, callback=lambda t, m: t.global_step == at and t.stop())
        assert tr.global_step == at
        tr = self.cls.from_run(name)
        assert type(tr) is self.cls and tr.global_step == at
        tr.train(self.steps - at, progress=False)
        return tr

    def killed(self, root, name: str, when: str = "anytime", at: int = 3):
        """SIGKILL a run in its own process, resume it from its last checkpoint, finish it.

        ``when``: ``"anytime"`` (killed from outside once ``at`` steps are logged: wherever it
        is), ``"step"`` (in step ``at + 1``, after the optimizer moved the weights),
        ``"checkpoint"`` (in step ``at + 1``, after its checkpoint file is written, before the
        folder is renamed). Returns (steps logged, last checkpoint) when it died.
        """
        script = textwrap.dedent(f"""
            import os, signal, importlib, torch
            from labkit.runs import checkpoint
            torch.set_num_threads({torch.get_num_threads()})
            cls = getattr(importlib.import_module({self.cls.__module__!r}), {self.cls.__name__!r})
            tr = cls(run_name={name!r}, **{self.kwargs!r})
            die = lambda: os.kill(os.getpid(), signal.SIGKILL)
            if {when!r} == "step":
                step = tr.optimizer_step
                tr.optimizer_step = lambda loss: (step(loss), tr.global_step == {at} and die())[0]
            if {when!r} == "checkpoint":
                save = checkpoint.torch.save
                checkpoint.torch.save = lambda obj, f: (save(obj, f),
                                                        tr.global_step == {at} + 1 and die())
            tr.train(progress=False)
        """)
        proc = subprocess.Popen(
            [sys.executable, "-c", script], env={**os.environ, "LABKIT_RUNS": str(root)}
        )
        metrics = root / name / "metrics.jsonl"
        deadline = time.time() + 300
        while when == "anytime" and time.time() < deadline and proc.poll() is None:
            if metrics.exists() and len(metrics.read_text().splitlines()) >= at:
                break
            time.sleep(0.01)
        if when == "anytime":
            os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=300) == -signal.SIGKILL
        logged = len(lk.load_run(root / name).metrics)
        last = checkpoint.steps(root / name)[-1]
        tr = self.cls.from_run(name)
        assert tr.global_step == last
        if last < self.steps:
            tr.train(self.steps - last, progress=False)
        return logged, last


@pytest.fixture(scope="session")
def resume():
    """:class:`Resume`: ``resume(cls, kwargs, steps).stopped(name, at)``, ``resume.metrics(run)``."""
    return Resume


@pytest.fixture(scope="session")
def heldout_gain():
    """``heldout_gain(trainer, n)``: held-out sampled accuracy on the first ``n`` held-out
    prompts before and after ``trainer.train()`` (seed 7): ``(before, after)``."""

    def gain(tr, n: int):
        probe = tr.task.heldout[:n]
        acc = lambda: lk.accuracy(tr.model, tr.tokenizer, tr.task, probe, temperature=1.0, seed=7)
        before = acc()
        tr.train(progress=False)
        return before, acc()

    return gain
