"""PG -> TRPO -> PPO (labkit.experiments.trpo): every arm is a valid config of its task, each
claim names real arms and a summary column its task produces, the KL summary on a hand case.
The runs themselves: the lab's live cell in fast mode (tests/test_notebooks.py) and the stored
result (tests/test_results_tables.py)."""

import pandas as pd
import pytest

from labkit.algos.config import TRPOConfig
from labkit.classic.trpo import TrustRegionConfig
from labkit.experiments import trpo

GRID_COLUMNS = {
    "updates with KL > delta (frac)",
    "KL per update (median)",
    "|ln(d/d_targ)| (median)",
    "J (last 10%)",
    "largest drop in J",
    "updates that lower J (frac)",
    "backward passes per update",
}
LM_COLUMNS = {"updates with KL > delta (frac)", "KL per update (median)"}
LM_COLUMNS |= {"|ln(d/d_targ)| (median)", "held-out accuracy", "seconds per step"}


def test_arms_are_valid_configs():
    for name, arm in trpo.ARMS.items():
        arm = dict(arm)
        if arm.pop("lm", False):
            lm = {k: v for k, v in trpo.LM.items() if k != "reward_funcs"}
            TRPOConfig(**lm, **arm)
            assert name.endswith(trpo.L)
        else:
            TrustRegionConfig(**arm)
            assert name.endswith(trpo.G)


def test_every_claim_names_real_arms_and_a_column_of_their_task():
    for c in trpo.EXPERIMENT.claims:
        assert c.arm in trpo.ARMS and c.baseline in trpo.ARMS, c.key
        assert c.arm[-5:] == c.baseline[-5:], c.key  # one task per claim
        columns = LM_COLUMNS if c.arm.endswith(trpo.L) else GRID_COLUMNS
        assert c.metric in columns, c.key
    assert len({c.key for c in trpo.EXPERIMENT.claims}) == len(trpo.EXPERIMENT.claims)
    assert set(trpo.EXPERIMENT.live["arms"]) <= set(trpo.ARMS)


def test_kl_summary_by_hand():
    s = trpo.kl_summary(pd.Series([0.01 / 2.718281828, 0.01, 0.04, 0.0]))
    assert s["updates with KL > delta (frac)"] == 0.25
    assert s["KL per update (median)"] == pytest.approx((0.01 / 2.718281828 + 0.01) / 2)
    # |ln(d/0.01)|: 1, 0, ln 4, ln(1e-10): median of (0, 1, 1.386, 23.03)
    assert s["|ln(d/d_targ)| (median)"] == pytest.approx((1 + 1.3862944) / 2, rel=1e-6)


def test_a_gridworld_arm_produces_its_columns(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_RUNS", str(tmp_path))
    out = trpo.train(
        "TRPO" + trpo.G,
        trpo.ARMS["TRPO" + trpo.G],
        seed=0,
        steps=3,
        fast=True,
        run_name="trpo/x",
        tick=lambda *a: None,
    )
    assert set(out.summary) == GRID_COLUMNS
    assert out.summary["updates with KL > delta (frac)"] == 0.0
    assert list(out.curves["step"]) == [1, 2, 3] and "kl/update" in out.curves
