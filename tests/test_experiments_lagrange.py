"""The length-bound experiment (labkit.experiments.lagrange): its arms build the constraint they
describe, its claims name real arms and summary columns, its curves are what the reward logs,
and L is the stated fraction of the cold start's pooled length. The runs: lab 34's live cell in
fast mode and the stored result."""

import pandas as pd
import pytest

from labkit.experiments import lagrange as lg
from labkit.experiments.cells import STATS
from labkit.rewards.kwargs import RewardLog, TrainerState
from labkit.rewards.lagrange import LengthConstraint


def held_out(value: float) -> dict:
    groups = [*lg.CELL_NAMES, "hard", "easy", "all"]
    return {f"{s} ({g})": value for s in STATS for g in groups}


def test_claims_name_arms_and_summary_columns():
    cold = held_out(30.0) | {"pass (pool)": 30.0, "length (pool)": 30.0}
    metrics = pd.DataFrame(
        {"step": [1], f"{lg.NAME}/lambda": [0.0], f"{lg.NAME}/cost": [9.0], "accuracy": [0.5]}
    )
    columns = set(lg.summarize(cold, held_out(20.0), 25.0, metrics))
    for c in lg.EXPERIMENT.claims:
        assert c.metric in columns and c.arm in lg.ARMS, c.key
        assert c.baseline is None or c.baseline in lg.ARMS, c.key
    assert set(lg.EXPERIMENT.live["arms"]) <= set(lg.ARMS)
    assert len(lg.EXPERIMENT.seeds) >= 5


def test_the_summary_measures_the_length_against_the_bound():
    cold = held_out(40.0) | {"pass (pool)": 40.0, "length (pool)": 40.0}
    after = held_out(0.0) | {f"length ({b})": 20.0 + 2 * i for i, b in enumerate(lg.CELL_NAMES)}
    m = pd.DataFrame({"step": range(1, 21), f"{lg.NAME}/lambda": [0.01] * 18 + [0.02, 0.04]})
    s = lg.summarize(cold, after, 30.0, m)
    assert s["length (pool) after"] == pytest.approx(25.0)  # (20 + 22 + ... + 30) / 6
    assert s["length / bound - 1"] == pytest.approx(25.0 / 30.0 - 1)
    assert s["length (pool) gain"] == pytest.approx(-15.0)
    assert s[f"{lg.NAME}/lambda (last 10%)"] == pytest.approx(0.03)  # the last 2 of 20 steps


def test_the_bound_is_the_stated_fraction_of_the_cold_start(monkeypatch):
    monkeypatch.setattr(lg, "cold_start", lambda per_cell: {"length (pool)": 40.0})
    assert lg.bound(8) == pytest.approx(lg.FRACTION * 40.0) == pytest.approx(30.0)


@pytest.mark.parametrize("arm", list(lg.ARMS))
def test_each_arm_is_the_multiplier_its_docstring_describes(arm):
    """A violation of 10 characters: the learned lam rises by eta x 10 = 0.001 a step, a fixed
    one stays; each arm logs the curves the lab draws."""
    f, log = LengthConstraint(30.0, name=lg.NAME, **lg.ARMS[arm]), RewardLog()
    for k in range(3):
        f(["x" * 40], trainer_state=TrainerState(global_step=k), **log.callbacks())
    lam0, eta = lg.ARMS[arm]["lam"], lg.ARMS[arm]["eta"]
    assert f.lam == pytest.approx(lam0 + 2 * 10 * eta)  # step 2's update still pending
    assert (eta > 0) == (arm == "learned") and eta in (0.0, lg.ETA)
    assert lg.ETA * 10 == pytest.approx(0.001)
    assert {f"{lg.NAME}/lambda", f"{lg.NAME}/cost"} <= set(log.means()) & set(lg.CURVES)


def test_the_fixed_penalties_sit_either_side_of_what_a_thought_earns():
    """The docstring's reasons, in numbers: at lam 0.05 the shortest thought (20 characters)
    costs a whole right answer; at 0.002 a 2x2 thought (~38) costs a fifth of its 0.38."""
    thought = len("<think>3+5=8</think>")
    assert thought == 20 and lg.ARMS["fixed lam 0.05"]["lam"] * thought == pytest.approx(1.0)
    assert lg.ARMS["fixed lam 0.002"]["lam"] * 38 == pytest.approx(0.076)
