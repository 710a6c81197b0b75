"""Language consistency (labkit.experiments.language): the verdict on hand-made tables and
(slow) the direction a fixed-seed run showed."""

import pandas as pd
import pytest
import torch

from labkit.experiments import language


def table(mixed=(0.2, 0.05), acc=(0.5, 0.48)):
    rows = [
        {
            "run": n,
            "mixed before": 0.2,
            "accuracy before": 0.3,
            "mixed after": m,
            "accuracy after": a,
        }
        for n, m, a in zip(language.VARIANTS, mixed, acc)
    ]
    return {"table": pd.DataFrame(rows).set_index("run")}


def test_verdict_both_halves():
    v = language.verdict(table())
    assert "\nREPRODUCED (mixing)" in v and "\nREPRODUCED (cost)" in v
    assert "NOT REPRODUCED (mixing)" in language.verdict(table(mixed=(0.1, 0.2)))
    assert "no accuracy drop" in language.verdict(table(acc=(0.4, 0.45)))
    assert "larger than" in language.verdict(table(acc=(0.5, 0.3)))


@pytest.mark.slow
def test_consistency_reward_lowers_mixing(runs):
    torch.set_num_threads(1)
    res = language.run(fast=True, seed=0, progress=False)  # 2 x 8 steps, 100 held-out prompts
    t = res["table"]
    # measured (seed 0): held-out mixing rate of thoughts 0.163 without, 0.120 with the reward
    # (cold start 0.163); accuracy 0.400 without, 0.370 with
    assert t.loc["acc + format + consistency", "mixed after"] < t.loc["acc + format", "mixed after"]
    assert "\nREPRODUCED (mixing)" in language.verdict(res)
