"""Runs that stop, crash, resume and fork: a resumed run repeats an uninterrupted one exactly."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch

import labkit as lk
from labkit.runs import checkpoint

SMALL = {"num_generations": 4, "prompts_per_step": 4, "beta": 0.04, "diagnostics": 1, "seed": 3,
             "lr_scheduler_type": "constant", "max_steps": 1000, "learning_rate": 3e-3}
STEPS = 6


def _metrics(run):
    m = lk.load_run(run).metrics
    return m.drop(columns=[c for c in m.columns if c.startswith("time/")])


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    os.environ["LABKIT_RUNS"] = str(root)
    lk.GRPOTrainer(run_name="straight", **SMALL).train(STEPS, progress=False)
    yield root
    os.environ.pop("LABKIT_RUNS")


def test_stopped_run_resumes_to_the_same_metrics(runs):
    tr = lk.GRPOTrainer(run_name="stopped", **SMALL)
    tr.train(STEPS, progress=False, callback=lambda t, m: t.global_step == 3 and t.stop())
    assert tr.global_step == 3 and checkpoint.steps(runs / "stopped") == [2, 3]
    tr = lk.GRPOTrainer.from_run("stopped")
    assert tr.global_step == 3
    tr.train(STEPS - 3, progress=False)
    a, b = _metrics(runs / "straight"), _metrics(runs / "stopped")
    assert list(b["step"]) == list(range(1, STEPS + 1))
    assert a.equals(b), (a.compare(b) if a.shape == b.shape else b)


def test_killed_run_loses_at_most_the_step_in_flight(runs):
    script = textwrap.dedent(f"""
        import torch, labkit as lk
        torch.set_num_threads({torch.get_num_threads()})
        lk.GRPOTrainer(run_name="killed", **{SMALL!r}).train(progress=False)
    """)
    env = {**os.environ, "LABKIT_RUNS": str(runs)}
    proc = subprocess.Popen([sys.executable, "-c", script], env=env)
    metrics = runs / "killed" / "metrics.jsonl"
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        if metrics.exists() and len(metrics.read_text().splitlines()) >= 3:
            break
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    logged = len(lk.load_run(runs / "killed").metrics)
    last = checkpoint.steps(runs / "killed")[-1]
    assert 3 <= logged and logged - 1 <= last <= logged  # at most the step in flight is lost
    tr = lk.GRPOTrainer.from_run("killed")
    assert tr.global_step == last
    if last < STEPS:
        tr.train(STEPS - last, progress=False)
    a, b = _metrics(runs / "straight"), _metrics(runs / "killed").head(STEPS)
    assert list(b["step"]) == list(range(1, STEPS + 1))
    assert a.equals(b)


def test_fork_branches_at_a_step_with_a_changed_config(runs):
    tr = lk.GRPOTrainer.fork("straight", step=STEPS - 1, run_name="branch", loss_type="grpo",
                             beta=0.0, reward_funcs=["exact_match"])
    assert tr.global_step == STEPS - 1 and tr.config.loss_type == "grpo"
    tr.train(2, progress=False)
    run = lk.load_run(runs / "branch")
    assert list(run.metrics["step"]) == list(range(1, STEPS + 2))
    parent = _metrics(runs / "straight")
    assert run.metrics["reward/mean"].head(STEPS - 1).equals(parent["reward/mean"].head(STEPS - 1))
    assert "rewards/exact_match/mean" in run.metrics.columns
    ev = run.events.iloc[-1]
    assert ev["kind"] == "fork" and ev["step"] == STEPS - 1 and ev["loss_type"] == "grpo"
    assert run.config["parent"]["step"] == STEPS - 1
    with pytest.raises(ValueError, match=r"step=1: .* checkpoints at steps \[5, 6\]"):
        lk.GRPOTrainer.fork("straight", step=1, run_name="nope")
    fig = lk.compare_runs(["straight", "branch"], "reward/mean")
    assert [t.name for t in fig.data][:2] == ["straight", "branch"]
    assert list(fig.data[1].x) == list(range(1, STEPS + 2))


def test_stopped_ppo_run_resumes_to_the_same_metrics_and_token_rows(runs):
    """PPO's extra state (the value head, its optimizer group, the minibatch permutations drawn
    from the trainer's generator) is in the checkpoint: every metric and per-token row repeats."""
    kw = {"prompts_per_step": 4, "num_generations": 2, "num_mini_batches": 2, "ppo_epochs": 2,
          "diagnostics": 2, "lr_scheduler_type": "constant", "max_steps": 100, "seed": 5}
    lk.PPOTrainer(run_name="ppo-straight", **kw).train(4, progress=False)
    tr = lk.PPOTrainer(run_name="ppo-stopped", **kw)
    tr.train(4, progress=False, callback=lambda t, m: t.global_step == 2 and t.stop())
    tr = lk.PPOTrainer.from_run("ppo-stopped")
    assert isinstance(tr, lk.PPOTrainer) and tr.global_step == 2
    tr.train(2, progress=False)
    a, b = _metrics(runs / "ppo-straight"), _metrics(runs / "ppo-stopped")
    assert list(b["step"]) == [1, 2, 3, 4] and {"vf/loss", "vf/explained_var"} <= set(b.columns)
    assert a.equals(b), (a.compare(b) if a.shape == b.shape else b)
    ta, tb = lk.load_run(runs / "ppo-straight").tokens, lk.load_run(runs / "ppo-stopped").tokens
    assert len(ta) == 8 and ta.equals(tb)
