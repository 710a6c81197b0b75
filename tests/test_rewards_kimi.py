"""Kimi k1.5's length reward (labkit.rewards.reasoning.kimi_length) against hand values."""

import pytest

from labkit.rewards import get_reward
from labkit.rewards.reasoning import kimi_length


def ans(n, think=""):
    return (f"<think>{think}</think>" if think else "") + f"<answer>{n}</answer>"


def test_lambda_within_each_group():
    short, mid, long = ans(7), ans(7, "3+4=7"), ans(7, "3+4=7 7+0=7")  # 18, 38, 44 chars
    lo, hi = len(short), len(long)
    c = [short, mid, long, ans(8, "3+4=8")]  # the last is wrong and mid-length
    r = kimi_length(c, answer=["7"] * 4, prompts=["3+4="] * 4)
    lam = [0.5 - (len(x) - lo) / (hi - lo) for x in c]
    assert r[:3] == pytest.approx(lam[:3])
    assert r[0] == 0.5 and r[2] == -0.5
    assert r[3] == pytest.approx(min(0.0, lam[3]))  # wrong: min(0, lambda)
    wrong_short = kimi_length([ans(9), long], answer=["7"] * 2, prompts=["p"] * 2)
    assert wrong_short == [0.0, -0.5]  # a short wrong answer gets min(0, 0.5) = 0


def test_groups_are_prompts_and_equal_lengths_get_zero():
    c = [ans(7), ans(7, "3+4=7"), ans(5), ans(6)]
    r = kimi_length(c, answer=["7", "7", "5", "5"], prompts=["a", "a", "b", "b"])
    assert r[:2] == [0.5, -0.5]
    assert r[2:] == [0.0, 0.0]  # group b: equal lengths
    assert get_reward("kimi_length") is kimi_length
