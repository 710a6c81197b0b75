"""The scratchpad task and the R1 rewards: targets verify, step labels match the true chain."""

import random

from labkit.rewards import REWARDS
from labkit.rewards.reasoning import answer_match, language_consistency, think_format
from labkit.tasks import get_task
from labkit.tasks.scratchpad import NOTATIONS, Scratchpad, steps, target


def test_every_target_verifies_and_every_step_is_correct():
    task, rng = get_task("scratchpad"), random.Random(0)
    for e in task.train[:300] + task.heldout[:100]:
        ops = task.operands(e.prompt)
        note = [rng.choice(NOTATIONS) for _ in ops[1:]]
        for think in (True, False):
            c = target(ops, think, note)
            assert task.verify(c, e.answer) and len(c) <= task.max_completion_chars
            assert all(s.correct for s in steps(c, ops)) and len(steps(c, ops)) == 4 * think


def test_a_wrong_step_is_labelled_and_only_it():
    c = target([3, 5, 8, 2, 7]).replace("8+8=16", "8+8=17")
    assert [s.correct for s in steps(c, [3, 5, 8, 2, 7])] == [True, False, True, True]
    extra = target([3, 5]).replace("</think>", " 8+1=9</think>")
    assert [s.correct for s in steps(extra, [3, 5])] == [True, False]
    assert c[steps(c, [3, 5, 8, 2, 7])[1].start :].startswith("8+8=17")


def test_train_and_heldout_are_disjoint_and_bad_sizes_are_named():
    t = Scratchpad()
    assert not {e.prompt for e in t.train} & {e.prompt for e in t.heldout}
    for kw, field in [
        ({"n_operands": 9}, "n_operands"),
        ({"digits": 0}, "digits"),
        ({"n_operands": 2, "n_train": 200}, "n_train"),
    ]:
        try:
            Scratchpad(**kw)
        except ValueError as err:
            assert field in str(err)
        else:
            raise AssertionError(kw)


def test_rewards_by_name_and_on_malformed_text():
    assert {"answer_match", "think_format", "language_consistency"} <= set(REWARDS)
    bad = ["", "<answer>", "<think>3+5=8<answer>8</answer>", "<answer>8</answer>junk"]
    assert answer_match(bad, answer=["8"] * 4) == [0.0] * 4
    assert think_format(bad) == [0.0] * 4
    assert language_consistency(bad) == [None] * 4
