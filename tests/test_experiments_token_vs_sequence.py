"""Token vs sequence objective (labkit.experiments.token_vs_sequence): every arm is a valid
config with a known sampler, each claim names real arms and a column the summary produces, the
summary and the log-log slope on hand cases. The runs themselves: the lab's live cell in fast
mode (tests/test_notebooks.py) and the stored result (tests/test_results_tables.py)."""

import math

import numpy as np
import pandas as pd
import pytest

from labkit.algos.config import GRPOConfig
from labkit.experiments import token_vs_sequence as tv

ROWS = pd.DataFrame(
    {
        "step": [1, 1, 1, 2, 2, 2],
        "update": [0, 1, 2, 0, 1, 2],
        "cos": [1.0, 0.9, 0.5, 1.0, 0.8, 0.7],
        "rel_err": [0.0, 0.01, 0.1, 1e-5, 0.02, 0.2],
        "kl": [0.0, 1e-4, 1e-2, 0.0, 4e-4, 4e-2],
    }
)


def test_arms_are_valid_configs_with_a_known_sampler():
    setup = {k: v for k, v in tv.SETUP.items() if k != "reward_funcs"}
    for name, arm in tv.ARMS.items():
        arm = dict(arm)
        sampler = arm.pop("sampler", "fp32")
        assert tv.SAMPLERS[sampler].sampler_precision == sampler
        assert ("bf16" in name) == (sampler == "bf16")
        GRPOConfig(**setup, **arm)
        assert f"mu {arm['num_iterations']}" in name


def test_every_claim_names_real_arms_and_a_summary_column():
    columns = set(tv.summary(ROWS))
    for c in tv.EXPERIMENT.claims:
        assert c.arm in tv.ARMS and (c.baseline is None or c.baseline in tv.ARMS), c.key
        assert c.metric in columns, c.key
    assert len({c.key for c in tv.EXPERIMENT.claims}) == len(tv.EXPERIMENT.claims)
    assert set(tv.EXPERIMENT.live["arms"]) <= set(tv.ARMS)
    assert len(tv.EXPERIMENT.seeds) >= 5


def test_the_staleness_claims_differ_only_in_mu_and_the_lr_claim_only_in_lr():
    for c in tv.EXPERIMENT.claims:
        if c.baseline is None:
            continue
        a, b = tv.ARMS[c.arm], tv.ARMS[c.baseline]
        differ = {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}
        assert len(differ) == 1, (c.key, differ)


def test_summary_by_hand():
    s = tv.summary(ROWS)
    assert s["rel. error (first update)"] == pytest.approx(0.5e-5)
    assert s["log10 rel. error (first update)"] == pytest.approx((-9 + -5) / 2)  # 0 floored
    assert s["log10 rel. error (last update)"] == pytest.approx((-1 + math.log10(0.2)) / 2)
    assert s["cos (last update)"] == pytest.approx(0.6)
    assert s["KL to mu_old (last update)"] == pytest.approx(0.025)
    # updates 1-2: rel_err = 1e0 * sqrt(kl) exactly at (1e-4, 0.01), (1e-2, 0.1), (4e-4, 0.02),
    # (4e-2, 0.2): slope 1/2
    assert s["log-log slope (rel. error on KL) - 1/2"] == pytest.approx(0.0, abs=1e-9)


def test_loglog_slope_closed_forms():
    x = np.logspace(-6, -1, 7)
    assert tv.loglog_slope(x, 3 * x) == pytest.approx(1.0)
    assert tv.loglog_slope(x, 0.1 * x**0.5) == pytest.approx(0.5)
    assert tv.loglog_slope([0.0, 1e-3, 1e-2, 1e-1], [1.0, 1e-3, 1e-2, 1e-1]) == pytest.approx(1.0)
    assert math.isnan(tv.loglog_slope([1e-3, 1e-2], [1.0, 2.0]))  # under 3 points


def test_summary_skips_updates_without_a_gradient():
    """A batch with A = 0 everywhere: rel_err and cos NaN (no gradient); its KL still counts."""
    extra = pd.DataFrame(
        {"step": [3, 3, 3], "update": [0, 1, 2], "cos": math.nan, "rel_err": math.nan}
    ).assign(kl=[0.0, 0.3, 0.5])
    s, s0 = tv.summary(pd.concat([ROWS, extra], ignore_index=True)), tv.summary(ROWS)
    for key in ("rel. error (first update)", "log10 rel. error (last update)", "cos (last update)"):
        assert s[key] == pytest.approx(s0[key]), key
    assert s["KL to mu_old (last update)"] == pytest.approx((1e-2 + 4e-2 + 0.5) / 3)
