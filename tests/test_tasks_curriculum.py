"""Prioritized sampling by pass rate: the weights, the counts the trainer reports, bad input."""

import random
from collections import Counter

import pytest
import torch

import labkit as lk
from labkit.tasks import Addition, get_task
from labkit.tasks.curriculum import PassRateSampler


def test_weights_follow_the_rule_and_sampling_follows_the_weights():
    t = PassRateSampler(get_task("addition"), weight="failure", pool=2)
    easy, hard = t.train
    t.observe([easy] * 8 + [hard] * 8, torch.tensor([True] * 8 + [False] * 8))
    assert t.pass_rate(easy) == pytest.approx(0.9) and t.pass_rate(hard) == pytest.approx(0.1)
    assert t.weights() == pytest.approx([0.1, 0.9])
    drawn = Counter(e.prompt for e in t.sample_prompts(2000, random.Random(0)))
    assert drawn[hard.prompt] / 2000 == pytest.approx(0.9, abs=0.03)
    t.weight = "variance"
    assert t.weights() == pytest.approx([0.09, 0.09])
    t.weight = "uniform"
    assert t.weights() == [1.0, 1.0]


def test_the_trainer_reports_every_completion_and_the_task_is_delegated():
    t = PassRateSampler(get_task("addition"), weight="failure", pool=16)
    tr = lk.GRPOTrainer(
        "tiny", task=t, max_steps=2, prompts_per_step=4, num_generations=4, run_name=None
    )
    tr.train(progress=False)
    assert sum(t.seen.values()) == 2 * 4 * 4
    assert sum(t.right.values()) == pytest.approx(tr.log.metrics["accuracy"].sum() * 16)
    assert t.max_answer_chars == get_task("addition").max_answer_chars
    assert t.heldout == get_task("addition").heldout


def test_easy_first_unlocks_the_cells_in_order_and_resumes_with_its_draws():
    t = PassRateSampler(get_task("graded"), weight="easy-first", pool=300, seed=1, horizon=6)
    rng, cells = random.Random(0), []
    for _ in range(7):
        cells.append({e.columns["bucket"] for e in t.sample_prompts(200, rng)})
    order = ["2x1", "3x1", "4x1", "5x1", "2x2", "3x2"]  # Graded's cells, easiest first
    assert cells == [set(order[:k]) for k in (1, 2, 3, 4, 5, 6, 6)]
    again = get_task("graded+easy-first", **t.spec())
    again.load_state_dict(t.state_dict())
    assert again.draws == 7 and again.weights() == t.weights()


def test_bad_input_names_the_field():
    with pytest.raises(ValueError, match="weight"):
        PassRateSampler(get_task("addition"), weight="hardest")
    with pytest.raises(ValueError, match="pool"):
        PassRateSampler(get_task("addition"), pool=0)
    with pytest.raises(ValueError, match="difficulty cells .* horizon"):
        PassRateSampler(get_task("addition"), weight="easy-first", horizon=10)
    with pytest.raises(ValueError, match="horizon"):
        PassRateSampler(get_task("graded"), weight="easy-first")


# a short GRPO run on a 6-prompt pool: after a few steps the failure weights differ a lot
RUN = {
    "num_generations": 4,
    "prompts_per_step": 4,
    "seed": 3,
    "lr_scheduler_type": "constant",
    "max_steps": 100,
    "learning_rate": 3e-3,
    "save_steps": 1,
    "diagnostics": 1,
}


def sampler() -> PassRateSampler:
    return PassRateSampler(get_task("addition"), weight="failure", pool=6, seed=2)


def test_a_named_run_on_a_sampler_resumes_to_the_same_metrics_and_counts(runs, resume):
    """config.json keeps the sampler's name, pool and seed; checkpoints its counts n_i, c_i:
    a run stopped after step 2 and resumed by name repeats the uninterrupted run."""
    straight = lk.GRPOTrainer(task=sampler(), run_name="straight", **RUN)
    straight.train(4, progress=False)
    tr = lk.GRPOTrainer(task=sampler(), run_name="stopped", **RUN)
    tr.train(2, progress=False)
    meta = lk.load_run("stopped").config
    assert (meta["task"], meta["task_kwargs"]) == ("addition+failure", {"pool": 6, "seed": 2})
    tr = lk.GRPOTrainer.from_run("stopped")
    assert isinstance(tr.task, PassRateSampler) and tr.task.train == sampler().train
    assert sum(tr.task.seen.values()) == 2 * 4 * 4  # the counts of steps 1-2, restored
    tr.train(2, progress=False)
    resume.assert_same("straight", "stopped", 4)
    assert (tr.task.seen, tr.task.right) == (straight.task.seen, straight.task.right)


def test_a_sampler_is_rebuilt_from_its_name_and_refuses_another_pools_counts():
    t = get_task("scratchpad+variance", pool=8, seed=1)
    assert (t.name, t.weight, t.spec()) == (
        "scratchpad+variance",
        "variance",
        {"pool": 8, "seed": 1},
    )
    assert t.train == PassRateSampler(get_task("scratchpad"), "variance", 8, 1).train
    with pytest.raises(ValueError, match="weight='hardest'"):
        get_task("scratchpad+hardest")
    with pytest.raises(ValueError, match="another prompt pool"):
        t.load_state_dict(get_task("scratchpad+variance", pool=8, seed=2).state_dict())


class Renamed(Addition):
    name = "my_addition"  # not in TASKS: get_task cannot rebuild it from its name


def test_a_sampler_on_an_unregistered_task_resumes_when_the_task_is_passed_again(runs):
    t = PassRateSampler(Renamed(), weight="failure", pool=6, seed=2)
    lk.GRPOTrainer(task=t, run_name="mine", **RUN).train(1, progress=False)
    with pytest.raises(ValueError, match="unknown task 'my_addition'"):
        lk.GRPOTrainer.from_run("mine")
    again = PassRateSampler(Renamed(), weight="failure", pool=6, seed=2)
    tr = lk.GRPOTrainer.from_run("mine", task=again)
    assert tr.task is again and again.seen == t.seen and sum(again.seen.values()) == 16
