"""Clipping made visible (labkit.experiments.clipping): the arms are the mu x eps grid of valid
configs, each claim names a real arm and a summary column, the summary and the sweep table read
the runs, and the clipped-token finder. The runs themselves: the lab's live cell in fast mode
(tests/test_notebooks.py) and the stored result."""

import pandas as pd
import pytest

from labkit.algos.config import BASE_RUN, GRPOConfig
from labkit.experiments import clipping
from labkit.runs.log import RunLog


def test_arms_are_the_grid_of_valid_configs():
    base = {k: v for k, v in BASE_RUN.items() if k != "reward_funcs"}
    assert len(clipping.ARMS) == len(clipping.MUS) * len(clipping.EPSILONS)
    for arm in clipping.ARMS.values():
        GRPOConfig(**(base | arm | {"learning_rate": clipping.LEARNING_RATE}))
    assert clipping.ARMS["mu=4, eps=0.1"] == {"num_iterations": 4, "epsilon": 0.1}


def metrics(clip):
    n = len(clip)
    return pd.DataFrame(
        {
            "step": range(1, n + 1),
            "clip/region": clip,
            "clip/region_last": [2 * c for c in clip],
            "clip/ratio_low_last": clip,
            "clip/ratio_high_last": clip,
            "kl/old_last": [0.01] * n,
            "ratio/max": [1.0, 3.0, 2.0, 1.0][:n],
            "reward/mean": [0.1, 0.2, 0.3, 0.4][:n],
        }
    )


def test_summary_and_sweep_table():
    s = clipping.summary(metrics([0.0, 0.02, 0.04, 0.02]))
    assert s["clip/region"] == pytest.approx(0.02) and s["steps clipping"] == 3
    assert s["ratio/max"] == 3.0 and s["reward/mean (last 10%)"] == pytest.approx(0.4)
    rows = [
        {"arm": a, "seed": k, **clipping.summary(metrics([0.01 * k] * 4))}
        for a in ("mu=2, eps=0.1", "mu=4, eps=0.3")
        for k in (1, 3)
    ]
    t = clipping.sweep_table(pd.DataFrame(rows)).set_index("arm")
    assert t.loc["mu=4, eps=0.3", "mu"] == 4 and t.loc["mu=4, eps=0.3", "epsilon"] == 0.3
    assert t.loc["mu=2, eps=0.1", "clip/region"] == pytest.approx(0.02)


def test_every_claim_names_a_real_arm_and_summary_column():
    columns = set(clipping.summary(metrics([0.0, 0.1])))
    for c in clipping.EXPERIMENT.claims:
        assert c.arm in clipping.ARMS and c.baseline in (None, *clipping.ARMS), c.key
        assert c.metric in columns, c.key
    assert set(clipping.EXPERIMENT.live["arms"]) <= set(clipping.ARMS)
    assert "mu=4, eps=0.1" in clipping.EXPERIMENT.live["arms"]  # the lab's clipped-token view
    assert len(clipping.EXPERIMENT.seeds) >= 5


def test_most_clipped_finds_the_completion_with_most_clipped_tokens():
    tokens = [
        {"step": 1, "sample": 0, "clipped": [0, 1, None]},
        {"step": 2, "sample": 3, "clipped": [1, 1, 0]},
        {"step": 2, "sample": 5, "clipped": [0, 0, 0]},
    ]
    assert clipping.most_clipped(RunLog(records={"tokens": tokens})) == (2, 3)
