"""Qwen3's switches and thinking budget on the graded task (labkit.tasks.switches): prompts carry
and shed their switch, fused targets verify and think exactly when asked, the budget cuts a
thought at B steps and leaves shorter ones alone, and the fused cold start's script draws the
mixture its docstring states."""

import importlib.util
import pathlib
import random
from collections import Counter

import pytest

from labkit.rewards.reasoning import think_format
from labkit.tasks.graded import Graded, steps_of
from labkit.tasks.switches import (
    EMPTY_THOUGHT,
    SWITCHES,
    cut_thought,
    fused_target,
    strip_switch,
    switch_of,
    thought_steps,
    with_switch,
)

SCRIPT = pathlib.Path(__file__).parent.parent / "scripts" / "make_fused_checkpoint.py"


@pytest.mark.parametrize("switch", list(SWITCHES))
def test_a_prompt_carries_and_sheds_its_switch(switch):
    p = with_switch("12+07+93=", switch)
    assert switch_of(p) == switch and strip_switch(p) == "12+07+93="
    assert Graded.operands(strip_switch(p)) == [12, 7, 93]


def test_the_switch_texts_are_qwen3s_flags_and_unknown_ones_fail():
    assert with_switch("3+5=", "think") == "3+5= /think"
    assert with_switch("3+5=", "no_think") == "3+5= /no_think"
    assert switch_of("3+5= /no_think") == "no_think"  # not read as "/think"
    with pytest.raises(ValueError, match="switch='nothink'"):
        with_switch("3+5=", "nothink")


def test_fused_targets_verify_and_think_only_when_asked():
    task = Graded()
    for e in task.heldout[:60]:
        ops, d = task.operands(e.prompt), e.columns["digits"]
        think, direct = fused_target(ops, d, "think"), fused_target(ops, d, "no_think")
        assert task.verify(think, e.answer) and task.verify(direct, e.answer)
        assert think_format([think, direct]) == [1.0, 0.0]
        assert direct.startswith(EMPTY_THOUGHT)
        assert thought_steps(think) == steps_of(ops, d) and thought_steps(direct) == []
    with pytest.raises(ValueError, match="mode"):
        fused_target([3, 5], 1, "maybe")


def test_the_budget_cuts_at_b_steps_and_keeps_shorter_thoughts():
    c = "<think>12+30=42 42+4=46 46+50=96 96+6=102</think><answer>102</answer>"
    assert [cut_thought(c, b) for b in range(5)] == [
        "<think></think>",
        "<think>12+30=42</think>",
        "<think>12+30=42 42+4=46</think>",
        "<think>12+30=42 42+4=46 46+50=96</think>",
        None,  # a thought of 4 steps is within a budget of 4: its own answer stays
    ]
    assert cut_thought(c, 9) is None
    assert cut_thought("<think>12+30=42 42+4=4", 9) == "<think>12+30=42 42+4=4</think>"  # unclosed
    assert cut_thought("<answer>46</answer>", 0) is None  # no thought: nothing to cut
    assert cut_thought("<think></think><answer>46</answer>", 0) is None
    with pytest.raises(ValueError, match="budget"):
        cut_thought(c, -1)


def test_the_fused_script_draws_the_stated_mixture():
    spec = importlib.util.spec_from_file_location("make_fused", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    task = Graded(n_train=3000)
    pairs = script.fused_pairs(task, think=0.5, recheck=0.0, seed=0)
    by = {s: [t for p, t in pairs if switch_of(p) == s] for s in SWITCHES}
    assert Counter(len(v) > 800 for v in by.values()) == Counter({True: 3})  # ~1000 each
    assert all(think_format(by["think"])) and not any(think_format(by["no_think"]))
    assert 0.45 < sum(think_format(by["none"])) / len(by["none"]) < 0.55
    for p, t in random.Random(0).sample(pairs, 200):
        assert task.verify(t, str(sum(task.operands(strip_switch(p)))))


def load_script():
    spec = importlib.util.spec_from_file_location("make_fused", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def test_the_fused_script_weights_the_easy_cells_as_asked():
    """``easy_weight`` draws an easy cell's example that many times, each with its own switch
    and mode (the no-switch think share stays ~0.5 there); ``easy_no_think`` adds /no_think
    pairs there only, ``easy_free`` no-switch pairs (still ~half thoughts); the function's
    defaults draw what the first build drew."""
    script, task = load_script(), Graded(n_train=3000)
    cell = {p: e.columns["bucket"] for e in task.train for p in [e.prompt]}
    base = script.fused_pairs(task, think=0.5, recheck=0.0, seed=0)
    assert script.fused_pairs(task, 0.5, 0.0, 0, ("2x1",), 1, 0) == base
    heavy = script.fused_pairs(task, 0.5, 0.0, 0, easy_cells=("2x1", "3x1"), easy_weight=3)
    n = Counter(cell[strip_switch(p)] for p, _ in heavy)
    n0 = Counter(cell[strip_switch(p)] for p, _ in base)
    assert n["2x1"] == 3 * n0["2x1"] and n["3x1"] == 3 * n0["3x1"] and n["2x2"] == n0["2x2"]
    free = [t for p, t in heavy if switch_of(p) == "none" and cell[p] == "2x1"]
    assert 0.45 < sum(think_format(free)) / len(free) < 0.55
    extra = script.fused_pairs(task, 0.5, 0.0, 0, easy_cells=("2x1",), easy_no_think=2)
    added = Counter((cell[strip_switch(p)], switch_of(p)) for p, _ in extra) - Counter(
        (cell[strip_switch(p)], switch_of(p)) for p, _ in base
    )
    assert set(added) == {("2x1", "no_think")} and added[("2x1", "no_think")] == 2 * n0["2x1"]
    free = script.fused_pairs(task, 0.5, 0.0, 0, easy_cells=("2x1",), easy_free=4)
    n = Counter(cell[strip_switch(p)] for p, _ in free)
    assert n["2x1"] == 5 * n0["2x1"] and n["3x1"] == n0["3x1"]  # the draws after differ
    n_free = Counter(switch_of(p) for p, _ in free if cell[strip_switch(p)] == "2x1")
    assert n_free["none"] > 4 * n0["2x1"] > 10 * n_free["no_think"]
    free_2x1 = [t for p, t in free if switch_of(p) == "none" and cell[p] == "2x1"]
    assert 0.45 < sum(think_format(free_2x1)) / len(free_2x1) < 0.55


def test_the_card_splits_the_free_pass_rate_by_mode_and_drops_out():
    script = load_script()
    idx = {"2x1": [0, 1, 2], "2x2": [3]}
    values = {"pass": [1.0, 0.0, 1.0, 0.0], "think": [0.0, 0.0, 1.0, 1.0]}
    s = script.by_mode(idx, values)
    assert s["pass | direct (2x1)"] == 0.5 and s["pass | think (2x1)"] == 1.0
    assert "pass | direct (2x2)" not in s and s["pass | think (hard)"] == 0.0
    assert script.without_out(["--steps", "5", "--out", "/x", "--out=/y", "--G", "2"]) == [
        "--steps",
        "5",
        "--G",
        "2",
    ]
