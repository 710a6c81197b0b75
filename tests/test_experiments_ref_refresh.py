"""Reference refresh (labkit.experiments.ref_refresh): every arm is a valid config, each claim
names real arms of one algorithm and a summary column that algorithm's runs produce, tau from
the run's length, the held-out KL to pi_0 is 0 at pi_0, and a short arm of each algorithm
produces its columns. The full run: the stored result (tests/test_results_tables.py)."""

import copy
import types

import pytest
import torch

import labkit as lk
from labkit.experiments import ref_refresh as rr

COMMON = {rr.ACC, rr.KL0_HELDOUT}
COLUMNS = {"grpo": COMMON | {rr.KL0, rr.KLREF, rr.REWARD}, "dpo": COMMON}


@pytest.mark.parametrize("steps", [rr.EXPERIMENT.steps, rr.EXPERIMENT.fast_steps])
def test_arms_are_valid_configs(steps):
    for arm, settings in rr.ARMS.items():
        refresh = rr.refresh_settings(settings, steps)
        if settings["algo"] == "grpo":
            fields = {k: v for k, v in rr.GRPO.items() if k != "reward_funcs"}
            cfg = lk.GRPOConfig(**fields, **refresh)
            assert cfg.beta == rr.BETA > 0  # the penalty a refresh acts on
        else:
            cfg = lk.DPOConfig(**rr.DPO, **refresh)
        assert cfg.sync_ref_model == (arm not in (rr.FIXED, rr.DPO_FIXED)), arm


def test_every_claim_compares_arms_of_one_algorithm_on_a_column_they_produce():
    for c in rr.EXPERIMENT.claims:
        algo = rr.ARMS[c.arm]["algo"]
        assert c.baseline in rr.ARMS and rr.ARMS[c.baseline]["algo"] == algo, c.key
        assert c.metric in COLUMNS[algo], c.key
    assert len({c.key for c in rr.EXPERIMENT.claims}) == len(rr.EXPERIMENT.claims)
    assert set(rr.EXPERIMENT.live["arms"]) <= set(rr.ARMS)
    assert len(rr.EXPERIMENT.seeds) >= 5


def test_tau_is_the_run_split_into_refreshes():
    hard = rr.ARMS[rr.HARD]
    assert rr.refresh_settings(hard, 300)["ref_model_sync_steps"] == 300 // rr.REFRESHES
    assert rr.refresh_settings(hard, 3)["ref_model_sync_steps"] == 1  # a short run still refreshes
    assert rr.refresh_settings(rr.ARMS[rr.SOFT], 10)["ref_model_mixup_alpha"] == 0.6
    assert rr.refresh_settings(rr.ARMS[rr.FIXED], 300) == {}


def test_heldout_kl_to_start_is_zero_at_the_start_and_positive_away_from_it(tiny):
    model, tok = tiny
    trainer = types.SimpleNamespace(
        model=model, tokenizer=tok, task=lk.get_task("addition"), device=torch.device("cpu")
    )
    assert rr.heldout_kl_to_start(trainer, 16, seed=0) == pytest.approx(0.0, abs=1e-6)
    moved = copy.deepcopy(model)
    with torch.no_grad():
        moved.lm_head.weight.mul_(1.5)  # a sharper policy
    trainer.model = moved
    assert rr.heldout_kl_to_start(trainer, 16, seed=0) > 1e-3


@pytest.mark.parametrize("arm", [rr.HARD, rr.DPO_SOFT])
def test_a_short_arm_produces_its_columns(arm, runs):
    out = rr.train(
        arm, rr.ARMS[arm], seed=0, steps=2, fast=True, run_name="rr/x", tick=lambda *a: None
    )
    assert set(out.summary) == COLUMNS[rr.ARMS[arm]["algo"]]
    assert list(out.curves["step"]) == [1, 2] and list(out.curves["ref/refreshes"]) == [1, 2]
    if arm == rr.HARD:  # refreshed after step 1: step 2's KL to pi_ref starts from 0 again
        assert out.curves["kl/k3"].iloc[1] == pytest.approx(0.0, abs=1e-6)
        assert out.curves["kl_init/k3"].iloc[1] > 0
