"""DPO against GRPO (labkit.experiments.dpo_vs_grpo): the sample accounting by hand (every arm
draws the same samples, offline all up front), the offline batch that passes over the pairs
``epochs`` times, claims that name real arms and the summary columns the runs produce, and a
two-step run of each algorithm that counts equal samples. The full run: the stored result."""

import pandas as pd
import pytest

from labkit.experiments import dpo_vs_grpo as dg

COLUMNS = {dg.ACC, dg.KL0, dg.DRAWN}
TAILS = {f"{c} (last 10%)" for c in dg.TAIL}


def test_every_arm_draws_the_same_samples():
    steps = dg.EXPERIMENT.steps
    totals = {dg.samples_drawn(a["algo"], steps, steps) for a in dg.ARMS.values()}
    assert totals == {dg.PER_STEP * steps}
    assert dg.GRPO["prompts_per_step"] * dg.GRPO["num_generations"] == dg.PER_STEP
    assert 2 * dg.PAIR_PROMPTS == dg.PER_STEP
    assert [dg.samples_drawn("online", s, 5) for s in range(3)] == [0, 64, 128]
    assert dg.samples_drawn("offline", 0, 5) == 320  # all before the first step
    with pytest.raises(ValueError, match="algo"):
        dg.samples_drawn("ppo", 1, 5)


def test_offline_batch_and_drawn_column_by_hand():
    assert dg.offline_batch(3909, 300) == 13 and dg.offline_batch(3909, 300, 4) == 52
    m = pd.DataFrame({"step": [1, 2, 3, 4]})
    assert dg.drawn_column(m, {1: 64, 2: 64, 4: 64})["samples/drawn"].tolist() == [
        64,
        128,
        128,
        192,
    ]


def test_claims_name_real_arms_and_summary_columns():
    for c in dg.EXPERIMENT.claims:
        assert c.arm in dg.ARMS and (c.baseline is None or c.baseline in dg.ARMS), c.key
        assert c.metric in COLUMNS | TAILS, c.key
    assert len({c.key for c in dg.EXPERIMENT.claims}) == len(dg.EXPERIMENT.claims)
    assert set(dg.EXPERIMENT.live["arms"]) <= set(dg.ARMS)
    assert len(dg.EXPERIMENT.seeds) >= 5


def test_two_steps_of_each_algorithm_count_equal_samples(runs):
    drawn = {}
    for arm in ("GRPO", dg.ONLINE, dg.OFFLINE):
        out = dg.train(
            arm,
            dg.ARMS[arm],
            seed=0,
            steps=2,
            fast=True,
            run_name=f"dg/{arm}",
            tick=lambda *a: None,
        )
        assert COLUMNS <= set(out.summary), arm
        assert 0 <= out.summary[dg.ACC] <= 1 and out.summary[dg.KL0] >= -1e-6, arm
        drawn[arm] = out.curves["samples/drawn"].tolist()
        if arm != "GRPO":  # DPO's implicit rewards, logged by both DPO trainers
            assert {"rewards/chosen (last 10%)", "logps/chosen (last 10%)"} <= set(out.summary)
    assert drawn["GRPO"] == drawn[dg.ONLINE] == [64, 128]
    assert drawn[dg.OFFLINE] == [128, 128]  # two steps' worth, drawn before the first
