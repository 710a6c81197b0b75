"""The reward bench: each buggy reference gets its bug flagged; labkit's own rewards pass; user
cases join the suite; the editor's bench tab shows the table."""

import pytest

import labkit as lk
from labkit.rewards.bench import BUGGY, adversarial_cases, reward_bench
from labkit.widgets.sandbox import Bank


@pytest.mark.parametrize("fn", BUGGY, ids=lambda f: f.__name__)
def test_each_buggy_reference_gets_its_bug_flagged(fn):
    result = reward_bench(fn, n_examples=1)
    assert BUGGY[fn] in set(result.flags["flag"]), result.table


@pytest.mark.parametrize("fn", [lk.exact_match, lk.digit_partial], ids=lambda f: f.__name__)
def test_labkits_own_rewards_pass(fn):
    result = reward_bench(fn)
    assert result.ok, result.flags
    assert len(result.table) == len(adversarial_cases())


def test_user_cases_are_added_and_judged():
    case = {"case": "words", "kind": "harmless", "completion": "the answer is {}"}
    gold = adversarial_cases(n_examples=1)[0]["completion"]
    case["completion"] = case["completion"].format(gold)
    result = reward_bench(lk.exact_match, n_examples=1, cases=[case])
    row = result.table.iloc[-1]
    assert row["case"] == "words" and row["flag"] == "variant not rewarded"


def test_the_editor_bench_tab_shows_the_flags():
    from labkit.widgets import RewardEditor

    ed = RewardEditor(
        Bank(["1", "2"], {"answer": ["1", "1"]}),
        code="def f(completions, answer, **kw):\n"
        "    return [float(str(a) in c) for c, a in zip(completions, answer)]",
    )
    result = ed.bench()
    assert not result.ok and "garbage rewarded" in ed.bench_out.value
    assert "reward_bench(f)" in ed.message.value and ed.tabs.titles[1] == "Reward bench"
