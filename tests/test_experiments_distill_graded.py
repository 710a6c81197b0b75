"""Distillation vs RL on graded's two-digit cells (labkit.experiments.distill_graded): the pool
holds only the hard cells and none of the probed prompts, the budget in closed form against a
hand count, the summary holds every column a claim is judged on, and both arms run end to end in
fast mode. The stored result: the lead's run (tests/test_results_tables.py once it is in)."""

import pandas as pd
import pytest
import torch

from labkit.experiments import compute
from labkit.experiments import distill_graded as dg
from labkit.experiments import r1_student as student
from labkit.experiments.cells import HARD
from labkit.tasks.graded import Graded


def test_the_pool_is_the_hard_cells_of_the_train_split_and_never_a_probed_prompt():
    task = dg.pool()
    assert {e.columns["bucket"] for e in task.train} == set(HARD)
    whole = Graded()
    assert [e.prompt for e in task.heldout] == [e.prompt for e in whole.heldout]
    assert not {e.prompt for e in task.train} & {e.prompt for e in whole.heldout}
    assert dg.pool() is task  # one object: the compute helpers cache by it


def test_solutions_are_the_graded_thoughts_and_answers():
    e = Graded.example([12, 7, 93], 2)
    assert student.solution(dg.pool(), e, think=True) == (
        "<think>12+0=12 12+7=19 19+90=109 109+3=112</think><answer>112</answer>"
    )
    assert student.solution(dg.pool(), e, think=False) == "<answer>112</answer>"


def test_budget_is_steps_of_mean_pool_thoughts_and_rl_gets_about_twice_the_steps():
    task = dg.pool()
    pairs = student.thought_pairs(task)
    assert len(pairs) == len(task.train)
    size = sum(len(p) + len(t) + 1 for p, t in pairs) / len(pairs)  # + eos
    assert student.distil_units(7, task) == pytest.approx(7 * 64 * 3 * size)
    assert student.prompt_tokens(task) == pytest.approx(7.5)  # "07+35=" and "12+07+93=", half each
    direct = len("<answer>112</answer>") + 1
    ratio = student.distil_units(1, task) / compute.rl_units(64, 7.5, direct)
    assert 1.5 < ratio < 2.5


def test_distillation_runs_the_steps_that_spend_the_budget():
    """Kept traces shorter than the pool's mean thought (mostly 2x2) get more steps."""
    task = dg.pool()
    units = student.distil_units(1200, task)
    short = [p for p in student.thought_pairs(task) if p[0].count("+") == 1][:50]  # 2x2 only
    n = dg.distil_steps(units, short)
    per_step = 64 * compute.sft_units(short) / len(short)
    assert n > 1200 and abs(n * per_step - units) <= per_step / 2
    assert dg.distil_steps(units, student.thought_pairs(task)) == 1200
    with pytest.raises(ValueError, match="no traces"):
        dg.distil_steps(units, [])


def test_the_scratchpad_defaults_stand():
    """r1_pipeline's stored result was made before ``task=``: the defaults give its numbers."""
    assert student.prompt_tokens() == 10
    assert student.distil_units(1) == student.distil_units(1, "scratchpad")
    assert student.thought_pairs()[0][1].startswith("<think>")


def test_rl_setup_is_the_teachers_with_the_tasks_length():
    assert dg.RL["reward_funcs"] == ["answer_match", "think_format"]
    assert dg.RL["max_completion_length"] is None  # the task's 97: a 3x2 thought is ~70
    assert dg.pool().max_completion_chars > 64


def held(value: float) -> dict:
    stats = {f"{s} ({c})": value for s in ("pass", "think") for c in (*dg.CELL_NAMES, "hard")}
    return stats | {"accuracy": value, "think_rate": value}


def test_summary_holds_every_claimed_column():
    p = pd.DataFrame([{"at": f, **held(0.1 * i)} for i, f in enumerate(student.QUARTERS)])
    s = dg.cell_columns("base", held(0.0)) | {"student base accuracy": 0.0}
    s |= student.summary(p, 1.0, 400) | dg.cell_columns("student", p.iloc[-1].to_dict())
    assert s["student accuracy"] == pytest.approx(0.3) == s["student pass (hard)"]
    for c in dg.EXPERIMENT.claims:
        assert c.arm in dg.ARMS and (c.baseline is None or c.baseline in dg.ARMS), c.key
        assert c.metric in s, c.key
    assert set(dg.EXPERIMENT.live["arms"]) <= set(dg.ARMS) and len(dg.EXPERIMENT.seeds) >= 5


@pytest.mark.slow
def test_both_arms_run_in_fast_mode(runs):
    torch.set_num_threads(1)
    res = dg.EXPERIMENT.run(fast=True, workers=1, progress=False)
    s = res.summaries.set_index("arm")
    assert set(s.index) == set(dg.ARMS)
    assert s.loc[dg.DISTILL, "kept traces"] > 0
    assert 0.8 < s.loc[dg.DISTILL, "student compute / budget"] < 1.2  # whole steps of 4 or so
    assert s.loc[dg.STUDENT_RL, "student compute / budget"] >= 1.0
    assert s["student base accuracy"].nunique() == 1  # same seed, same base
    assert {c.key for c in res.claims} == {v.claim.key for v in res.verdicts()}
