"""RFT vs online RFT vs GRPO (labkit.experiments.rft): the methods' configs, the verdict,
and the direction the fixed-seed fast run showed."""

import pandas as pd

from labkit.algos.config import GRPOConfig
from labkit.experiments import rft


def test_online_rft_is_grpo_with_a_equal_r_and_one_update():
    setup = {k: v for k, v in rft.SETUP.items() if k != "reward_funcs"}
    online = GRPOConfig(**(setup | rft.METHODS["Online RFT"]))
    assert online.advantage_estimator == "reinforce" and online.num_iterations == 1
    assert GRPOConfig(**(setup | rft.METHODS["GRPO"])).advantage_estimator == "grpo"
    assert rft.METHODS["Offline RFT"] is None


def test_verdict_reads_the_table():
    t = pd.DataFrame({"held-out accuracy": [0.30, 0.40, 0.42, 0.55]},
                     index=["cold start", "Offline RFT", "Online RFT", "GRPO"])
    v = rft.verdict({"table": t, "config": {"heldout": 400}}).splitlines()
    assert v[0].startswith("REPRODUCED: offline RFT beats the cold start")
    assert v[1].startswith("NOT REPRODUCED: online RFT beats offline RFT")  # +0.02
    assert v[2].startswith("REPRODUCED: GRPO beats online RFT")
