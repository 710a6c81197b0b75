"""Policy-gradient estimators on the harness (labkit.experiments.pg_variance): every arm is a valid
config of the labs' base run, each claim names a real arm and a summary column the arms
produce, and the training summary's pieces. The runs themselves: the lab's live cell in fast
mode (tests/test_notebooks.py) and the stored result."""

import math

import pandas as pd

from labkit.algos.config import BASE_RUN, GRPOConfig, PPOConfig
from labkit.experiments import pg_variance as pv
from labkit.experiments.gradient_variance import estimator_config


def test_arms_are_valid_configs_of_the_labs_base_run():
    assert pv.BASE == BASE_RUN
    base = {k: v for k, v in BASE_RUN.items() if k != "reward_funcs"}
    for arm in pv.ARMS.values():
        key = arm["estimator"]
        cfg = estimator_config(key, base)
        (PPOConfig if key == "ppo" else GRPOConfig)(**cfg)
    ppo = estimator_config("ppo", base)
    assert ppo["ppo_epochs"] == BASE_RUN["num_iterations"] and ppo["num_mini_batches"] == 1


def test_steps_to_a_reward_level():
    m = pd.DataFrame({"reward/mean": [0.1, 0.5, 0.9, 0.9, 0.9]})
    assert pv.steps_to(m, 0.8, window=2) == 4.0
    assert math.isnan(pv.steps_to(m, 0.95))


def test_every_claim_names_a_real_arm_and_summary_column():
    noise = {
        "rel. var",
        "rel. var se",
        "rel. var, reward r - 1",
        "loo cos",
        "cos(E g, E g_REINFORCE)",
        "|E g| / |E g_REINFORCE|",
        pv.DIST,
        "b*",
        "mean reward",
    }
    training = {
        "held-out accuracy",
        "reward/mean (last 10%)",
        "steps to reward 0.8",
        "state MiB",
        "value-head params",
    }
    for c in pv.EXPERIMENT.claims:
        assert c.arm in pv.ARMS and c.baseline in (None, *pv.ARMS), c.key
        assert c.metric in noise | training, c.key
    assert set(pv.EXPERIMENT.live["arms"]) <= set(pv.ARMS)
    assert len(pv.EXPERIMENT.seeds) >= 5
