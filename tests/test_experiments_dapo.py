"""DAPO piece by piece (labkit.experiments.dapo): every arm is a valid config, the all-pieces
arm holds every piece, samples are counted per sampling round, and each claim is judged on an
arm and a summary column the experiment produces. The runs themselves: the lab's live cell in
fast mode (tests/test_notebooks.py) and the stored result (tests/test_results_tables.py)."""

import pandas as pd

from labkit.algos.config import GRPOConfig
from labkit.experiments import dapo


def test_arms_are_valid_configs_and_all_holds_every_piece():
    for arm in dapo.ARMS.values():
        setup = {k: v for k, v in dapo.SETUP.items() if k != "reward_funcs"}
        GRPOConfig(**(setup | {k: v for k, v in arm.items() if k != "sample_budget"}))
    every = dapo.ARMS["DAPO (all)"]
    assert every["loss_type"] == "dapo" and every["epsilon_high"] == 0.28
    assert every["dynamic_sampling"] and every["mask_truncated_completions"]
    assert every["overlong_buffer"] == 4
    assert dapo.ARMS[dapo.EQUAL]["sample_budget"] == "naive"


def test_samples_drawn_counts_rounds():
    per = dapo.SETUP["prompts_per_step"] * dapo.SETUP["num_generations"]
    plain = pd.DataFrame({"step": [1, 2, 3]})
    assert dapo.samples_drawn(plain).tolist() == [per, 2 * per, 3 * per]
    ds = pd.DataFrame({"step": [1, 2, 3], "sampling/rounds": [1, 3, 2]})
    assert dapo.samples_drawn(ds).tolist() == [per, 4 * per, 6 * per]


def test_every_claim_names_a_real_arm_and_summary_column():
    columns = {"held-out accuracy", "samples drawn", "steps"} | {
        f"{c} (last 10%)" for c in dapo.TAIL
    }
    for c in dapo.EXPERIMENT.claims:
        assert c.arm in dapo.ARMS and c.baseline in dapo.ARMS, c.key
        assert c.metric in columns, c.key
    assert set(dapo.EXPERIMENT.live["arms"]) <= set(dapo.ARMS)
