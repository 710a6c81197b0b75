"""Adaptive thinking (labkit.experiments.adaptive_think, .fused): the bonus pays what the docstring
says, the arms differ only in it, the claims name real arms and summary columns, the budget
probe cuts more thoughts at smaller budgets, and the shipped ``tiny-fused`` obeys its switches
on fixed prompts. The runs: lab 98's live cell in fast mode and the stored result."""

import json

import pytest

from labkit.experiments import adaptive_think as at
from labkit.experiments import fused
from labkit.models.policy import BUILTIN, load_policy
from labkit.models.rollout import rollout
from labkit.tasks.graded import CELLS, bucket
from labkit.tasks.switches import with_switch

CELL_NAMES = [bucket(k, d) for k, d in CELLS]


def fake_switch_cells(model, tokenizer, switch, per_cell, seed, samples=1):
    idx = {c: [i] for i, c in enumerate(CELL_NAMES)}
    n = len(CELL_NAMES)
    think = 1.0 if switch == "think" else 0.0 if switch == "no_think" else 0.5
    values = {"pass": [0.5] * n, "think": [think] * n, "well_formed": [1.0] * n, "length": [9] * n}
    return fused.group_stats(idx, values)


def fake_budget_cells(model, tokenizer, budgets, per_cell, seed, samples=1, cells=()):
    idx = {"2x2": [0], "3x2": [1]}
    values = {"pass full": [0.4, 0.2]}
    for B in budgets:
        values |= {f"pass B={B}": [0.1 * B, 0.05 * B], f"cut B={B}": [1.0, 1.0]}
    return fused.group_stats(idx, values)


@pytest.fixture
def summaries(monkeypatch):
    monkeypatch.setattr(fused, "switch_cells", fake_switch_cells)
    monkeypatch.setattr(fused, "budget_cells", fake_budget_cells)
    cold = fused.switch_stats(None, None, per_cell=8, seed=0)
    return {
        at.COLD: cold | fused.budget_stats(None, None, at.BUDGETS, per_cell=4, samples=1, seed=0),
        at.ACC: at.rl_summary(cold, cold),
        at.ADAPTIVE: at.rl_summary(cold, cold),
    }


def test_claims_name_arms_and_summary_columns(summaries):
    for c in at.EXPERIMENT.claims:
        assert c.arm in at.ARMS and c.metric in summaries[c.arm], c.key
        if c.baseline is not None:
            assert c.baseline in at.ARMS and c.metric in summaries[c.baseline], c.key
    assert set(at.EXPERIMENT.live["arms"]) <= set(at.ARMS)
    assert len(at.EXPERIMENT.seeds) >= 5
    assert "rewards/correct_no_thought/mean" in at.EXPERIMENT.curves


def test_the_summaries_compute_obedience_budget_slope_and_gap(summaries):
    cold = summaries[at.COLD]
    assert cold["disobey /think"] == 0.0 and cold["disobey /no_think"] == 0.0
    # hard pass at B: (0.1 B + 0.05 B) / 2 = 0.075 B, so the slope is 0.075
    assert cold["budget slope (hard)"] == pytest.approx(0.075)
    assert cold["pass (hard): B=1 - B=0"] == pytest.approx(0.075)
    rl = summaries[at.ADAPTIVE]
    assert rl["think gap before"] == rl["think gap after"] == 0.0
    assert rl["think (2x2) gain"] == 0.0 and rl["disobey /no_think after"] == 0.0


def test_the_arms_differ_only_in_the_bonus():
    assert at.ARMS[at.ACC]["delta"] == 0.0 and at.ARMS[at.ADAPTIVE]["delta"] == at.DELTA == 0.05
    c = ["<think></think><answer>8</answer>", "<think>3+5=8</think><answer>8</answer>"]
    r = at.correct_no_thought(c, answer=["8", "8"])
    acc = [1.0, 1.0]
    assert [a + at.DELTA * b for a, b in zip(acc, r)] == [1.05, 1.0]  # the adaptive arm's reward
    assert at.correct_no_thought(["<think></think><answer>9</answer>"], answer=["8"]) == [0.0]


@pytest.fixture(scope="module")
def policy():
    return load_policy("tiny-fused")


def test_the_budget_probe_cuts_fewer_thoughts_at_larger_budgets(policy):
    b = fused.budget_cells(*policy, (0, 1, 2, 3), per_cell=3, seed=0, samples=2)
    cut = [b[f"cut B={B} (hard)"] for B in range(4)]
    assert cut == sorted(cut, reverse=True)  # the same first samples, cut at each budget
    assert all(0.0 <= b[k] <= 1.0 for k in b)
    assert {"pass full (2x2)", "pass B=0 (3x2)", "cut B=3 (hard)"} <= set(b)


def test_the_shipped_fused_checkpoint_obeys_its_switches(policy):
    """Greedy, on fixed prompts: /no_think opens with the empty thought, /think with a step."""
    model, tok = policy
    prompts = ["3+5=", "12+07=", "4+4+1+9=", "23+54+10="]
    for switch, want in (("no_think", "<think></think><answer>"), ("think", "<think>")):
        switched = [with_switch(p, switch) for p in prompts]
        texts = rollout(model, tok, switched, 97, temperature=0.0).completions
        for t in texts:
            assert t.startswith(want), (switch, t)
            if switch == "think":
                assert t[len("<think>")].isdigit(), t
    card = json.loads((BUILTIN["tiny-fused"] / "labkit_card.json").read_text())
    assert set(card["cells"]) == {"think", "no_think", "none"}
