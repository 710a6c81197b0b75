"""Rejection sampling (labkit.algos.rejection): the filter, the statistics, the sampler."""

import pytest

from labkit.algos.rejection import RejectionSample, rejection_sample
from labkit.tasks.scratchpad import Scratchpad


def sample(keep="correct"):
    comps = [
        "<think>1+2=3</think><answer>3</answer>",
        "<answer>3</answer>",
        "<think>1+2=4</think><answer>4</answer>",
        "3",
    ]
    return RejectionSample(
        ["1+2="] * 4,
        comps,
        ["3"] * 4,
        [True, True, False, False],
        [True, False, True, False],
        [40, 19, 40, 2],
        keep,
    )


def test_keep_correct_or_correct_with_thought():
    assert sample().kept == [True, True, False, False]
    assert sample("correct_think").pairs == [("1+2=", "<think>1+2=3</think><answer>3</answer>")]
    s = sample("correct_think").stats()
    assert s == {
        "drawn": 4,
        "kept": 1,
        "kept_frac": 0.25,
        "accuracy": 0.5,
        "think_rate": 0.5,
        "len_mean": 25.25,
        "prompts_covered": 1,
    }


def test_sampler_draws_n_per_prompt_and_verifies(tiny):
    model, tok = tiny
    task = Scratchpad()
    rs = rejection_sample(model, tok, task, task.heldout[:3], n=2, max_completion_length=8)
    assert len(rs.completions) == 6 and rs.prompts[0] == rs.prompts[1]
    assert rs.correct == [task.verify(c, a) for c, a in zip(rs.completions, rs.answers)]
    again = rejection_sample(model, tok, task, task.heldout[:3], n=2, max_completion_length=8)
    assert again.completions == rs.completions  # seeded


def test_bad_keep_and_n_raise(tiny):
    model, tok = tiny
    task = Scratchpad()
    with pytest.raises(ValueError, match="keep"):
        rejection_sample(model, tok, task, task.heldout[:1], keep="all")
    with pytest.raises(ValueError, match="n=0"):
        rejection_sample(model, tok, task, task.heldout[:1], n=0)
