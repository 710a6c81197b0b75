"""The R1 pipeline (labkit.experiments.r1_pipeline, r1_student, compute): the student, the
compute accounting against hand counts, the budget that stops the RL student, each stage's
budget, the job's progress bar across stages, and a summary holding every column a claim is
judged on. The runs themselves: the lab's live cell in fast mode (tests/test_notebooks.py) and
the stored result (tests/test_results_tables.py)."""

import types

import pandas as pd
import pytest
import torch

from labkit.algos.config import GRPOConfig
from labkit.experiments import compute
from labkit.experiments import r1_pipeline as r1
from labkit.experiments import r1_student as student
from labkit.models.policy import load_policy
from labkit.tasks.scratchpad import target


def test_student_is_smaller_and_runs():
    model, tok = student.student_policy()
    n = sum(p.numel() for p in model.parameters())
    assert n < sum(p.numel() for p in load_policy("tiny")[0].parameters()) / 4
    ids = tok(["1+2="], return_tensors="pt")["input_ids"]
    assert model(ids).logits.shape == (1, 4, len(tok))  # [B, T, V]


def test_units_count_tokens_by_hand():
    # "1+2+3+4+5=" is 10 characters; "<answer>15</answer>" 19, + eos: 30 tokens, 3 units each
    assert compute.sft_units([("1+2+3+4+5=", "<answer>15</answer>")]) == 3 * 30
    assert compute.rl_units(batch=64, prompt_tokens=10, completion_mean=20) == 4 * 64 * 30
    m = pd.DataFrame({"len/mean": [20.0, 10.0]})
    assert compute.rl_spent(m, batch=1, prompt_tokens=10) == 4 * 30 + 4 * 20


def test_distillation_budget_is_its_steps_of_mean_thoughts():
    pairs = student.thought_pairs()
    size = sum(len(p) + len(t) + 1 for p, t in pairs) / len(pairs)
    assert student.distil_units(5) == pytest.approx(5 * 64 * 3 * size)
    assert student.prompt_tokens() == 10  # five digits and four pluses and "="
    # a direct answer is about a third of a thought: RL gets about twice the steps
    direct = len(target([1, 2, 3, 4, 5], think=False)) + 1
    ratio = student.distil_units(1) / compute.rl_units(64, 10, direct)
    assert 1.5 < ratio < 2.5


def fake_trainer(lengths):
    log = types.SimpleNamespace(metrics=pd.DataFrame({"len/mean": lengths}))
    return types.SimpleNamespace(log=log, global_step=len(lengths))


def test_budget_stops_at_the_first_step_that_reaches_it_and_probes_each_fraction_once():
    seen = []
    per_step = compute.rl_units(2, 10, 10.0)  # 160 units a step
    b = compute.ComputeBudget(4 * per_step, 2, 10, (0.25, 0.5, 1.0), lambda f, t: seen.append(f))
    stops = [b(fake_trainer([10.0] * k)) for k in range(1, 6)]
    assert stops == [False, False, False, True, True]
    assert seen == [0.25, 0.5, 1.0]  # each once, by the step that crossed it
    seen.clear()
    b(fake_trainer([10.0, 50.0]))  # a long step (160 -> 640 units) crosses two at once
    assert seen == [0.5, 1.0]


def test_budget_scales_from_the_first_rl_stage_and_rl_is_a_valid_config():
    b = r1.budget(40, fast=False)
    assert (b["rl1"], b["sft"], b["rl2"], b["distil"]) == (40, 60, 30, 1200)
    assert r1.budget(3, fast=True)["rs_prompts"] < b["rs_prompts"]
    GRPOConfig(**{k: v for k, v in r1.RL.items() if k != "reward_funcs"})


def test_stage_ticks_fill_the_job_bar_in_order():
    seen = []
    tick = lambda done, total: seen.append((done, total))
    for start, end in ((0.0, 0.35), (0.35, 1.0)):
        stage = r1.share(tick, 40, start, end)
        for done in range(11):
            stage(done, 10)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen) and seen[-1] == (40, 40)
    assert {t for _, t in seen} == {40}


def student_probes(acc):
    return pd.DataFrame({"at": list(student.QUARTERS), "accuracy": acc, "think_rate": [1.0] * 4})


def test_summary_and_stages_hold_every_claimed_column():
    probes = [
        {"accuracy": a, "think_rate": t, "len_mean": n}
        for a, t, n in ((0.5, 0.4, 39.0), (0.7, 0.9, 60.0), (0.8, 1.0, 62.0), (0.85, 1.0, 62.0))
    ]
    s = r1.pipeline_summary(probes, {"kept": 100, "kept_frac": 0.5})
    assert s["RS + SFT gain"] == pytest.approx(0.3) and s["second RL gain"] == pytest.approx(0.05)
    s |= student.summary(student_probes([0.1, 0.2, 0.3, 0.32]), 1.0, 400)
    assert s["student accuracy, last quarter's gain"] == pytest.approx(0.02)
    assert s["student accuracy, end - best earlier quarter"] == pytest.approx(0.02)
    past_top = student.summary(student_probes([0.1, 0.8, 0.6, 0.7]), 1.0, 400)
    assert past_top["student accuracy, end - best earlier quarter"] == pytest.approx(-0.1)
    for c in r1.EXPERIMENT.claims:
        assert c.arm in r1.ARMS and (c.baseline is None or c.baseline in r1.ARMS), c.key
        assert c.metric in s, c.key
    summaries = pd.DataFrame([{"arm": r1.PIPELINE, "seed": 0, "student base accuracy": 0.4, **s}])
    st = r1.stages(summaries)
    assert st["arm"].tolist() == list(r1.STAGES)
    assert st["accuracy"].tolist() == [0.5, 0.7, 0.8, 0.85]
    c = student.curves(summaries)
    assert c["step"].tolist() == [0, 25, 50, 75, 100]
    assert c["student accuracy"].tolist() == [0.4, 0.1, 0.2, 0.3, 0.32]


def test_students_distil_and_rl_probe_each_quarter_and_stop_at_the_budget(runs):
    torch.set_num_threads(1)
    model, tok = student.student_policy(0)
    model.save_pretrained(runs / "init")
    tok.save_pretrained(runs / "init")
    pairs = student.thought_pairs()[:8]
    probe = lambda m, t: {"accuracy": 0.0, "think_rate": 0.0}
    tick = lambda done, total: None
    t, p, spent = student.distil(
        str(runs / "init"), pairs, "d", steps=4, seed=0, probe=probe, tick=tick
    )
    assert p["at"].tolist() == list(student.QUARTERS) and p["step"].tolist() == [1, 2, 3, 4]
    assert spent == pytest.approx(4 * 64 * compute.sft_units(pairs) / len(pairs))
    units = 1.5 * compute.rl_units(64, 10, 1.0)  # at least two steps of the shortest answers
    t, p, spent = student.rl(
        str(runs / "init"), "r", units=units, max_steps=50, seed=0, probe=probe, tick=tick, **r1.RL
    )
    assert spent >= units and t.global_step < 50
    assert compute.rl_spent(t.log.metrics.iloc[:-1], 64, 10) < units  # the first step over
    assert p["at"].tolist() == list(student.QUARTERS)
