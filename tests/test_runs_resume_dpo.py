"""DPO runs that stop, crash, resume and fork: the resumed run repeats an uninterrupted one."""

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch

import labkit as lk
from labkit.algos.dpo import load_pairs
from labkit.runs import checkpoint

SMALL = {"batch_size": 4, "pair_prompts": 48, "num_generations": 4, "learning_rate": 1e-3,
         "max_steps": 1000, "seed": 3}
STEPS = 6


def _metrics(run):
    m = lk.load_run(run).metrics
    return m.drop(columns=[c for c in m.columns if c.startswith("time/")])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    os.environ["LABKIT_RUNS"] = str(root)
    lk.DPOTrainer(run_name="straight", **SMALL).train(STEPS, progress=False)
    yield root
    os.environ.pop("LABKIT_RUNS")


def test_stopped_dpo_run_resumes_to_the_same_metrics(runs):
    tr = lk.DPOTrainer(run_name="stopped", **SMALL)
    tr.train(STEPS, progress=False, callback=lambda t, m: t.global_step == 3 and t.stop())
    assert tr.global_step == 3 and checkpoint.steps(runs / "stopped") == [2, 3]
    assert load_pairs(runs / "stopped") == tr.pairs and len(tr.pairs) > SMALL["batch_size"]
    tr = lk.DPOTrainer.from_run("stopped")
    assert isinstance(tr, lk.DPOTrainer) and tr.global_step == 3
    tr.train(STEPS - 3, progress=False)
    a, b = _metrics(runs / "straight"), _metrics(runs / "stopped")
    assert list(b["step"]) == list(range(1, STEPS + 1))
    assert a.equals(b), (a.compare(b) if a.shape == b.shape else b)


def test_the_pair_samplers_state_is_part_of_the_checkpoint(runs):
    """Control: the same checkpoint with the pair sampler reseeded draws other pairs, so the
    equality above needs the sampler's restored state (not only the model's)."""
    want = _metrics(runs / "straight").iloc[STEPS - 1]
    same = lk.DPOTrainer.fork("straight", STEPS - 1, "same").step()  # fork: parent untouched
    tr = lk.DPOTrainer.fork("straight", STEPS - 1, "reseeded")
    tr.rng = random.Random(SMALL["seed"])
    other = tr.step()
    assert same["loss"] == want["loss"] and same["logps/chosen"] == want["logps/chosen"]
    assert other["logps/chosen"] != want["logps/chosen"]


def test_killed_dpo_run_loses_at_most_the_step_in_flight(runs):
    script = textwrap.dedent(f"""
        import torch, labkit as lk
        torch.set_num_threads({torch.get_num_threads()})
        lk.DPOTrainer(run_name="killed", **{SMALL!r}).train(progress=False)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script],
                            env={**os.environ, "LABKIT_RUNS": str(runs)})
    metrics = runs / "killed" / "metrics.jsonl"
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        if metrics.exists() and len(metrics.read_text().splitlines()) >= 3:
            break
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    logged = len(lk.load_run(runs / "killed").metrics)
    last = checkpoint.steps(runs / "killed")[-1]
    assert 3 <= logged and logged - 1 <= last <= logged  # at most the step in flight is lost
    tr = lk.DPOTrainer.from_run("killed")
    assert tr.global_step == last
    if last < STEPS:
        tr.train(STEPS - last, progress=False)
    a, b = _metrics(runs / "straight"), _metrics(runs / "killed").head(STEPS)
    assert list(b["step"]) == list(range(1, STEPS + 1))
    assert a.equals(b)


def test_dpo_fork_branches_at_a_step_with_a_changed_beta(runs):
    tr = lk.DPOTrainer.fork("straight", step=STEPS - 1, run_name="branch", beta=0.5)
    assert tr.global_step == STEPS - 1 and tr.config.beta == 0.5
    tr.train(2, progress=False)
    run = lk.load_run(runs / "branch")
    assert list(run.metrics["step"]) == list(range(1, STEPS + 2))
    parent = _metrics(runs / "straight")
    assert run.metrics["loss"].head(STEPS - 1).equals(parent["loss"].head(STEPS - 1))
    assert run.metrics["loss"].iloc[STEPS - 1] != parent["loss"].iloc[STEPS - 1]  # beta 0.5
    ev = run.events.iloc[-1]
    assert ev["kind"] == "fork" and ev["step"] == STEPS - 1 and ev["beta"] == 0.5
    assert run.config["parent"]["step"] == STEPS - 1 and run.config["beta"] == 0.5
    assert load_pairs(runs / "branch") == load_pairs(runs / "straight")
    with pytest.raises(ValueError, match=r"step=1: .* checkpoints at steps \[5, 6\]"):
        lk.DPOTrainer.fork("straight", step=1, run_name="nope")


def test_a_dpo_run_on_a_passed_model_needs_it_again_to_resume(runs):
    model, tok = lk.load_policy("tiny")
    lk.DPOTrainer(model, tokenizer=tok, run_name="object", **SMALL).train(1, progress=False)
    with pytest.raises(ValueError, match="model passed as an object: pass it again"):
        lk.DPOTrainer.from_run("object")
    with pytest.raises(ValueError, match="save_steps=-1"):
        lk.DPOConfig(save_steps=-1)
