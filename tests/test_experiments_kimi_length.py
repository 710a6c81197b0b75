"""Kimi's length reward and long2short on graded (labkit.experiments.kimi_length): the warm-up,
the weight's reason, the thought-vs-thought pairs, long2short's start from the acc policy, the
claims against real arms and summary columns (the stored run's verdicts: test_stored_verdicts.py)."""

import numpy as np
import pytest
import torch

from labkit.experiments import kimi_length as k
from labkit.experiments import long2short as l2s
from labkit.experiments.cells import EXTRA, STATS, changes, heldout_cells
from labkit.experiments.lagrange import CELL_NAMES
from labkit.models.policy import load_policy
from labkit.rewards.kwargs import TrainerState
from labkit.rewards.reasoning import kimi_length
from labkit.runs.log import RunInUse


def held_out(value: float) -> dict:
    groups = [*CELL_NAMES, "hard", "easy", "all"]
    return k.with_pool({f"{s} ({g})": value for s in (*STATS, *EXTRA) for g in groups})


def ans(n, think=""):
    return (f"<think>{think}</think>" if think else "") + f"<answer>{n}</answer>"


def test_claims_name_arms_and_summary_columns():
    columns = set(changes(held_out(30.0), held_out(20.0))) | set(l2s.pair_stats([]))
    for c in k.EXPERIMENT.claims:
        assert c.metric in columns and c.arm in k.ARMS, c.key
        assert c.baseline is None or c.baseline in k.ARMS, c.key
    assert set(k.EXPERIMENT.live["arms"]) <= set(k.ARMS)
    assert len(k.EXPERIMENT.seeds) >= 5
    assert list(k.ARMS)[-1] == k.L2S  # a seed's long2short job is sent after its acc job


def test_the_pool_weighs_the_cells_equally():
    s = k.with_pool({f"{st} ({b})": float(i) for st in STATS for i, b in enumerate(CELL_NAMES)})
    assert s["pass (pool)"] == s["length (pool)"] == pytest.approx(2.5)


def test_the_length_term_waits_for_the_warm_up():
    """Kimi's warm-up: 0 for the first third of the steps (the run is then the acc run), the
    paper's reward from there on."""
    c, kw = [ans(7), ans(7, "3+4=7")], {"answer": ["7"] * 2, "prompts": ["3+4="] * 2}
    start = round(60 * k.WARMUP)
    f = k.WarmedUp(kimi_length, start)
    assert start == 20 and f.__name__ == "kimi_length"
    assert f(c, trainer_state=TrainerState(global_step=start - 1), **kw) == [0.0, 0.0]
    assert f(c, trainer_state=TrainerState(global_step=start), **kw) == [0.5, -0.5]


def test_the_weight_keeps_a_right_answer_above_a_wrong_one():
    """W = 0.5: a right answer earns at least 1 - W / 2, a wrong one at most 0."""
    right = [1 + k.W * lam for lam in np.linspace(-0.5, 0.5, 11)]
    wrong = [k.W * min(0.0, lam) for lam in np.linspace(-0.5, 0.5, 11)]
    assert min(right) == pytest.approx(0.75) and max(wrong) == 0.0
    assert k.plain_length(["x" * k.L_MAX]) == [-1.0]


def test_pairs_are_thought_against_thought():
    """Direct answers never enter a pair; every longer correct thought is rejected against the
    shortest; wrong answers take no part."""
    short, recheck = ans(16, "3+5=8 8+8=16"), ans(16, "3+5=8 3+5=8 8+8=16")
    twice = ans(16, "3+5=8 3+5=8 8+8=16 8+8=16")
    outs = [twice, ans(16), recheck, short, ans(17, "3+5=8")]
    pairs = l2s.thought_pairs("3+5+8=", outs, [True, True, True, True, False])
    assert [(p["chosen"], p["rejected"]) for p in pairs] == [(short, recheck), (short, twice)]
    assert l2s.thought_pairs("3+5+8=", [ans(16), short], [True, True]) == []
    s = l2s.pair_stats(pairs)
    assert (s["pairs"], s["rechecks chosen"], s["rechecks rejected"]) == (2, 0.0, 1.5)


def test_pair_stats_read_two_digit_prompts():
    chosen, rejected = ans(46, "12+30=42 42+4=46"), ans(46, "12+30=42 12+30=42 42+4=46")
    s = l2s.pair_stats([{"prompt": "12+34=", "chosen": chosen, "rejected": rejected}])
    assert (s["rechecks chosen"], s["rechecks rejected"]) == (0.0, 1.0)
    assert s["length rejected"] - s["length chosen"] == len("12+30=42 ")


def test_rechecks_metric_counts_redundant_steps_per_thought():
    c = [ans(16, "3+5=8 3+5=8 8+8=16 8+8=16"), ans(16)]
    assert l2s.rechecks(c, prompts=["3+5+8="] * 2, digits=[1, 1]) == [2.0, None]


def test_long2short_reads_its_seeds_acc_run():
    assert k.ACC == l2s.ACC  # the arm long2short starts from is kimi_length's acc arm
    assert l2s.acc_run_name("kimi_length/long2short/seed-3") == "kimi_length/acc/seed-3"
    assert l2s.acc_run_name("kimi_length-fast/long2short/seed-0") == "kimi_length-fast/acc/seed-0"


def test_long2short_waits_while_another_worker_trains_the_acc_run(monkeypatch):
    """The acc run is busy (RunInUse) until its final checkpoint appears: long2short waits, then
    reads that checkpoint, and trains nothing itself."""
    model, _ = load_policy(k.MODEL)
    state = {n: torch.full_like(v, 0.5) for n, v in model.state_dict().items()}
    have, tries = [[], [], [4]], []
    monkeypatch.setattr(l2s.checkpoint, "steps", lambda run_dir: have.pop(0) if have else [4])
    monkeypatch.setattr(l2s.checkpoint, "read", lambda run_dir, step: {"model": state})

    def busy(run_name):
        tries.append(run_name)
        raise RunInUse("another worker")

    got, _ = l2s.acc_policy(
        "exp/long2short/seed-0", model_name=k.MODEL, steps=4, train_acc=busy, wait_s=0
    )
    assert tries == ["exp/acc/seed-0"] * 2
    assert all(torch.all(p == 0.5) for p in got.parameters())


def test_dpo_steps_take_passes_over_the_pairs_within_the_cap():
    """``PASSES`` passes of 32 pairs a step, at most half the RL run's 60 steps, at least one."""
    assert l2s.dpo_steps(32, 60) == l2s.PASSES
    assert l2s.dpo_steps(10**4, 60) == 30 and l2s.dpo_steps(0, 60) == 1


def test_heldout_cells_extra_stats():
    stats = heldout_cells(*load_policy(k.MODEL), per_cell=2, seed=0, extra=True)
    for s in EXTRA:
        assert f"{s} (all)" in stats and f"{s} (2x2)" in stats
    assert stats["rechecks (all)"] >= 0 or np.isnan(stats["rechecks (all)"])
