"""Reward functions and the checks made on what they return."""

import math

import pytest

from labkit.rewards import RewardError, call_reward, digit_partial, exact_match


def test_builtin_rewards_by_hand():
    assert exact_match(["12", "13", "", "12 "], answer=["12"] * 4) == [1.0, 0.0, 0.0, 1.0]
    assert digit_partial(["120", "130", "121", "12"], answer=["120"] * 4) == [
        1.0,
        0.5 / 3,
        0.0,
        0.0,
    ]


@pytest.mark.parametrize(
    "fn, match",
    [
        (lambda completions, **kw: 1 / 0, "raised ZeroDivisionError"),
        (lambda completions, **kw: [1.0], "returned 1 values for 2 completions"),
        (lambda completions, **kw: [math.nan, 1.0], "returned nan for completion 0"),
        (lambda completions, **kw: [1.0, math.inf], "returned inf for completion 1"),
        (lambda completions, **kw: ["1", 1.0], "returned '1' \\(str\\)"),
        (lambda completions, **kw: 3.0, "returned float, not a list"),
    ],
)
def test_bad_rewards_are_named_and_explained(fn, match):
    with pytest.raises(RewardError, match=match):
        call_reward(fn, ["a", "b"], {})


def test_none_means_not_applicable_and_bools_count():
    assert call_reward(lambda completions, **kw: [None, True], ["a", "b"], {})[1] == 1.0
    assert math.isnan(call_reward(lambda completions, **kw: [None, 0.0], ["a", "b"], {})[0])


def test_columns_reach_the_function_by_name():
    def uses_answer(completions, answer, prompts, **kwargs):
        return [float(c == a) for c, a in zip(completions, answer)]

    assert call_reward(uses_answer, ["1", "2"], {"answer": ["1", "1"], "prompts": ["p", "q"]}) == [
        1.0,
        0.0,
    ]
