"""Runs that stop, crash, resume and fork, for every trainer (GRPO, PPO, DPO, SFT, reward model):
a resumed run repeats an uninterrupted one exactly, a killed run loses at most the step in
flight, a fork branches at a step with changed settings."""

import random

import pytest

import labkit as lk
from labkit.algos.pairs import demonstration_pairs
from labkit.algos.reward_model import RewardModelTrainer
from labkit.algos.sft import SFTTrainer
from labkit.runs import checkpoint
from labkit.runs.log import load_jsonl

TASK = lk.get_task("addition")
SFT_PAIRS = [(e.prompt, e.answer) for e in TASK.train[:64]]
RM_PAIRS = demonstration_pairs(TASK, TASK.train[:64], seed=0)
RM_HELDOUT = demonstration_pairs(TASK, TASK.heldout[:32], seed=1)

# trainer class, config (literals: a killed run rebuilds it in its own process), steps
SPECS = {
    "grpo": (
        lk.GRPOTrainer,
        {
            "num_generations": 4,
            "prompts_per_step": 4,
            "beta": 0.04,
            "diagnostics": 1,
            "seed": 3,
            "lr_scheduler_type": "constant",
            "max_steps": 1000,
            "learning_rate": 3e-3,
            "save_steps": 1,
        },
        6,
    ),
    # PPO's extra state: the value head, its optimizer group, the minibatch permutations
    "ppo": (
        lk.PPOTrainer,
        {
            "prompts_per_step": 4,
            "num_generations": 2,
            "num_mini_batches": 2,
            "ppo_epochs": 2,
            "diagnostics": 2,
            "lr_scheduler_type": "constant",
            "max_steps": 100,
            "seed": 5,
            "save_steps": 1,
        },
        4,
    ),
    "dpo": (
        lk.DPOTrainer,
        {
            "batch_size": 4,
            "pair_prompts": 48,
            "num_generations": 4,
            "learning_rate": 1e-3,
            "max_steps": 1000,
            "seed": 3,
            "save_steps": 1,
        },
        6,
    ),
    "sft": (
        SFTTrainer,
        {
            "pairs": SFT_PAIRS,
            "batch_size": 8,
            "warmup_steps": 2,
            "save_steps": 1,
            "max_steps": 1000,
            "seed": 3,
        },
        6,
    ),
    "rm": (
        RewardModelTrainer,
        {
            "pairs": RM_PAIRS,
            "heldout": RM_HELDOUT,
            "eval_every": 2,
            "batch_size": 8,
            "save_steps": 1,
            "max_steps": 1000,
            "seed": 3,
        },
        6,
    ),
}
slow = pytest.mark.slow


@pytest.fixture(scope="module")
def straight(module_runs, resume):
    """``straight(algo)``: the name of the algorithm's uninterrupted run (made on first use)."""
    made = set()

    def get(algo):
        if algo not in made:
            resume(*SPECS[algo]).straight(f"{algo}-straight")
            made.add(algo)
        return f"{algo}-straight"

    return get


@slow
@pytest.mark.parametrize("algo", list(SPECS))
def test_a_stopped_run_resumes_to_the_same_metrics(algo, straight, module_runs, resume):
    r = resume(*SPECS[algo])
    r.stopped(f"{algo}-stopped", at=r.steps // 2)
    assert checkpoint.steps(module_runs / f"{algo}-stopped") == [r.steps - 1, r.steps]
    resume.assert_same(straight(algo), f"{algo}-stopped", r.steps)
    if algo == "ppo":  # every completion's per-token rows, value and return repeat too
        assert len(lk.load_run(straight(algo)).tokens) == 2 * r.steps


KILLS = [
    ("grpo", "anytime"),
    ("grpo", "step"),
    ("grpo", "checkpoint"),
    ("ppo", "step"),
    ("dpo", "anytime"),
    ("sft", "step"),
    ("rm", "step"),
]


@slow
@pytest.mark.parametrize("algo, when", KILLS, ids=[f"{a}-{w}" for a, w in KILLS])
def test_a_killed_run_loses_at_most_the_step_in_flight(algo, when, straight, module_runs, resume):
    r, name = resume(*SPECS[algo]), f"{algo}-killed-{when}"
    logged, last = r.killed(module_runs, name, when, at=3)
    if when == "anytime":
        assert 3 <= logged and logged - 1 <= last <= logged
    elif when == "step":  # step 4 died before it was logged
        assert (logged, last) == (3, 3)
    else:  # step 4 was logged, its checkpoint half written: resumed from 3, step 4 redone
        assert (logged, last) == (4, 3)
        assert not list((module_runs / name / "checkpoints").glob("*.tmp"))
    resume.assert_same(straight(algo), name, r.steps)


@slow
def test_a_grpo_fork_branches_at_a_step_with_a_changed_config(straight, module_runs, resume):
    steps = SPECS["grpo"][2]
    parent = straight("grpo")
    tr = lk.GRPOTrainer.fork(
        parent,
        step=steps - 1,
        run_name="grpo-branch",
        loss_type="grpo",
        beta=0.0,
        reward_funcs=["exact_match"],
    )
    assert tr.global_step == steps - 1 and tr.config.loss_type == "grpo"
    tr.train(2, progress=False)
    run = lk.load_run("grpo-branch")
    assert list(run.metrics["step"]) == list(range(1, steps + 2))
    before = resume.metrics(parent)["reward/mean"].head(steps - 1)
    assert run.metrics["reward/mean"].head(steps - 1).equals(before)
    assert "rewards/exact_match/mean" in run.metrics.columns
    ev = run.events.iloc[-1]
    assert ev["kind"] == "fork" and ev["step"] == steps - 1 and ev["loss_type"] == "grpo"
    assert run.config["parent"]["step"] == steps - 1
    with pytest.raises(ValueError, match=r"step=1: .* checkpoints at steps \[5, 6\]"):
        lk.GRPOTrainer.fork(parent, step=1, run_name="nope")
    fig = lk.compare_runs([parent, "grpo-branch"], "reward/mean")
    assert [t.name for t in fig.data][:2] == [parent, "grpo-branch"]
    assert list(fig.data[1].x) == list(range(1, steps + 2))


@slow
def test_a_dpo_fork_branches_at_a_step_with_a_changed_beta(straight, module_runs, resume):
    steps = SPECS["dpo"][2]
    parent = straight("dpo")
    tr = lk.DPOTrainer.fork(parent, step=steps - 1, run_name="dpo-branch", beta=0.5)
    assert tr.global_step == steps - 1 and tr.config.beta == 0.5
    tr.train(2, progress=False)
    run, before = lk.load_run("dpo-branch"), resume.metrics(parent)["loss"]
    assert list(run.metrics["step"]) == list(range(1, steps + 2))
    assert run.metrics["loss"].head(steps - 1).equals(before.head(steps - 1))
    assert run.metrics["loss"].iloc[steps - 1] != before.iloc[steps - 1]  # beta 0.5
    ev = run.events.iloc[-1]
    assert ev["kind"] == "fork" and ev["step"] == steps - 1 and ev["beta"] == 0.5
    assert run.config["parent"]["step"] == steps - 1 and run.config["beta"] == 0.5
    pairs = load_jsonl(module_runs / parent / "pairs.jsonl")
    assert load_jsonl(module_runs / "dpo-branch" / "pairs.jsonl") == pairs == tr.pairs
    assert len(pairs) > SPECS["dpo"][1]["batch_size"]
    with pytest.raises(ValueError, match=r"step=1: .* checkpoints at steps \[5, 6\]"):
        lk.DPOTrainer.fork(parent, step=1, run_name="nope")


@slow
def test_the_pair_samplers_state_is_part_of_the_checkpoint(straight, resume):
    """Control: the same checkpoint with the pair sampler reseeded draws other pairs, so the
    equality above needs the sampler's restored state (not only the model's)."""
    steps, parent = SPECS["dpo"][2], straight("dpo")
    want = resume.metrics(parent).iloc[steps - 1]
    same = lk.DPOTrainer.fork(parent, steps - 1, "dpo-same").step()  # fork: parent untouched
    tr = lk.DPOTrainer.fork(parent, steps - 1, "dpo-reseeded")
    tr.rng = random.Random(SPECS["dpo"][1]["seed"])
    other = tr.step()
    assert same["loss"] == want["loss"] and same["logps/chosen"] == want["logps/chosen"]
    assert other["logps/chosen"] != want["logps/chosen"]


@pytest.mark.parametrize("algo", ["sft", "rm"])
def test_sft_and_reward_model_runs_have_a_run_folder(algo, runs):
    """config.json, metrics.jsonl and the training data (pairs.jsonl) under runs/<name>/."""
    cls, kw, _ = SPECS[algo]
    tr = cls(run_name=algo, **kw)
    tr.train(2, progress=False)
    assert {"config.json", "metrics.jsonl", "pairs.jsonl"} <= {
        p.name for p in (runs / algo).iterdir()
    }
    run = lk.load_run(algo)
    assert run.config["algorithm"] == tr.algorithm and run.config["pairs"] == len(kw["pairs"])
    assert run.config["model"] == "tiny" and run.config["batch_size"] == 8
    assert list(run.metrics["step"]) == [1, 2] and {"loss", "grad_norm", "lr"} <= set(run.metrics)
    rows = load_jsonl(runs / algo / "pairs.jsonl")
    if algo == "sft":
        assert [(r["prompt"], r["target"]) for r in rows] == SFT_PAIRS
    else:
        assert rows == RM_PAIRS and "heldout/accuracy" in run.metrics  # eval_every=2
        assert load_jsonl(runs / algo / "heldout.jsonl") == [{"heldout": RM_HELDOUT}]


def test_a_run_on_a_passed_model_needs_it_again_to_resume(runs, tiny):
    model, tok = tiny
    lk.DPOTrainer(model, tokenizer=tok, run_name="object", **SPECS["dpo"][1]).train(
        1, progress=False
    )
    with pytest.raises(ValueError, match="model passed as an object: pass it again"):
        lk.DPOTrainer.from_run("object")
    SFTTrainer(pairs=SFT_PAIRS, run_name="unsaved", save_steps=0).train(1, progress=False)
    with pytest.raises(FileNotFoundError, match="no checkpoint: run with save_steps >= 1"):
        SFTTrainer.from_run("unsaved")
