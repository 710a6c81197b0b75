"""Prioritized sampling by pass rate: the weights, the counts the trainer reports, bad input."""

import random
from collections import Counter

import pytest
import torch

import labkit as lk
from labkit.tasks import get_task
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
    tr = lk.GRPOTrainer("tiny", task=t, max_steps=2, prompts_per_step=4, num_generations=4,
                        run_name=None)
    tr.train(progress=False)
    assert sum(t.seen.values()) == 2 * 4 * 4
    assert sum(t.right.values()) == pytest.approx(tr.log.metrics["accuracy"].sum() * 16)
    assert t.max_answer_chars == get_task("addition").max_answer_chars
    assert t.heldout == get_task("addition").heldout


def test_bad_input_names_the_field():
    with pytest.raises(ValueError, match="weight"):
        PassRateSampler(get_task("addition"), weight="hardest")
    with pytest.raises(ValueError, match="pool"):
        PassRateSampler(get_task("addition"), pool=0)
