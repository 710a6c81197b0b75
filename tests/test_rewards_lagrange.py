"""The length constraint as a reward (labkit.rewards.lagrange): lam is updated once per step from
the step's mean length, logged every step, fixed when eta = 0, refused in a worker process, and
kept in a run's checkpoints (a resumed run goes on with the multiplier it had)."""

import os

import pytest

import labkit as lk
from labkit.algos.scoring import RewardScorer
from labkit.rewards.kwargs import RewardLog, TrainerState
from labkit.rewards.lagrange import LengthConstraint
from labkit.runs import checkpoint


def call(f, step, texts, log=None):
    extra = log.callbacks() if log is not None else {}
    return f(texts, trainer_state=TrainerState(global_step=step), **extra)


def test_one_update_per_step_from_the_mean_length_of_all_its_batches():
    f = LengthConstraint(bound=10.0, eta=0.01)
    assert call(f, 0, ["x" * 16]) == [0.0]  # lam_0 = 0
    assert call(f, 0, ["x" * 12, "x" * 14]) == [0.0, 0.0]  # a second batch of step 0: same lam
    assert f.lam == 0.0
    out = call(f, 1, ["x" * 4, "x" * 10])  # mean over step 0: 14, over by 4 -> lam_1 = 0.04
    assert f.lam == pytest.approx(0.04)
    assert out == pytest.approx([0.24, 0.0])  # -0.04 (4 - 10), -0.04 (10 - 10)
    call(f, 2, ["x"])  # step 1: mean 7, under by 3 -> lam_2 = 0.04 - 0.03
    assert f.lam == pytest.approx(0.01)
    call(f, 3, ["x"])  # step 2: mean 1, under by 9 -> projected to 0
    assert f.lam == 0.0


def test_lambda_and_the_cost_are_logged_every_step():
    f, log = LengthConstraint(bound=10.0, lam=0.5, name="len_c"), RewardLog()
    call(f, 0, ["x" * 12, "x" * 4], log)
    assert log.means() == {"len_c/lambda": 0.5, "len_c/cost": 8.0, "len_c/violation": -2.0}


def test_a_fixed_penalty_never_moves_and_an_outside_call_moves_nothing():
    fixed = LengthConstraint(bound=5.0, lam=0.2)  # eta = 0
    for k in range(3):
        assert call(fixed, k, ["x" * 15]) == pytest.approx([-2.0])
    assert fixed.lam == 0.2
    learned = LengthConstraint(bound=5.0, eta=0.1)
    for _ in range(3):  # no trainer_state: a reward tried on cached completions
        learned(["x" * 15])
    call(learned, 7, ["x" * 5])
    assert learned.lam == 0.0 and learned.state_dict()["n"] == 1


def test_the_hinge_form_only_charges_what_is_over_the_bound():
    f = LengthConstraint(bound=10.0, lam=0.1, eta=0.01, form="hinge")
    assert call(f, 0, ["x" * 4, "x" * 14]) == pytest.approx([0.0, -0.4])
    call(f, 1, ["x"])  # mean max(0, c - 10) over step 0: 2 -> 0.1 + 0.02
    assert f.lam == pytest.approx(0.12)


def test_a_restored_state_goes_on_as_the_original_would():
    a = LengthConstraint(bound=10.0, eta=0.01)
    for k, n in enumerate((20, 30, 25)):
        call(a, k, ["x" * n])
    b = LengthConstraint(bound=10.0, eta=0.01)
    b.load_state_dict(a.state_dict())  # step 2's update still pending
    assert call(b, 3, ["x" * 8]) == call(a, 3, ["x" * 8])
    assert b.lam == a.lam == pytest.approx(0.01 * (10 + 20 + 15))


def test_a_call_in_another_process_is_refused(monkeypatch):
    f = LengthConstraint(bound=10.0, eta=0.01)
    monkeypatch.setattr(os, "getpid", lambda: -1)  # as in a forked reward worker
    with pytest.raises(RuntimeError, match="reward_runtime='auto'"):
        f(["x"])


def test_bad_settings_and_twin_names_are_refused():
    with pytest.raises(ValueError, match="bound=0"):
        LengthConstraint(bound=0)
    with pytest.raises(ValueError, match="form='square'"):
        LengthConstraint(bound=5.0, form="square")
    twins = RewardScorer([LengthConstraint(bound=5.0), LengthConstraint(bound=9.0)])
    with pytest.raises(ValueError, match="two stateful rewards are named 'length_constraint'"):
        twins.state_dict()


def test_a_resumed_run_keeps_the_multiplier(runs):
    def trainer(**kw):
        return dict(
            reward_funcs=["exact_match", LengthConstraint(bound=1.0, eta=0.05)],
            task="addition",
            num_generations=4,
            prompts_per_step=4,
            max_completion_length=6,
            track_kl=False,
            save_steps=1,
            seed=0,
            **kw,
        )

    tr = lk.GRPOTrainer("tiny", run_name="lagrange", max_steps=4, **trainer())
    tr.train(progress=False)
    f = tr.scorer.funcs[1][0]
    lams = tr.log.metrics["length_constraint/lambda"].tolist()
    assert lams[0] == 0.0 and lams[-1] > 0  # sums of two 2-digit numbers: over 1 character
    assert checkpoint.steps(runs / "lagrange")[-1] == 4
    fresh = LengthConstraint(bound=1.0, eta=0.05)  # lam = 0 until the checkpoint restores it
    back = lk.GRPOTrainer.from_run("lagrange", reward_funcs=["exact_match", fresh])
    assert fresh.state_dict() == f.state_dict() and fresh.lam == lams[-1]
    back.train(1, progress=False)
    assert back.log.metrics["length_constraint/lambda"].iloc[-1] > lams[-1]
