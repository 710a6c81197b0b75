"""Lab 51's CPU stand-in (labkit.experiments.precision): every arm a valid config, the TIS
spread of a mismatch row, and each claim judged on an arm and a summary column the experiment
produces. The runs: the lab's live cell in fast mode and the stored result; the mismatch itself:
tests/test_precision.py and tests/test_tis.py."""

import pytest

from labkit.algos.config import GRPOConfig
from labkit.experiments import precision
from labkit.experiments.gpu import CPU


def summary_columns() -> set[str]:
    return {
        "|dlogp| sampler vs trainer",
        "|dlogp| vs fp32",
        "max |w - 1| (fp32 trainer)",
        "max |w - 1| (same precision)",
        "clipped (fp32 trainer)",
        "held-out before",
        "held-out accuracy",
        "held-out gain",
    }


def test_arms_are_valid_configs():
    fixed = {k: v for k, v in CPU.items() if k != "model"}
    for name, arm in precision.ARMS.items():
        cfg = GRPOConfig(**(fixed | arm))
        assert cfg.precision in precision.PRECISIONS, name
    assert precision.ARMS["bf16 + TIS"]["tis_cap"] == precision.TIS_CAP


def test_spread_is_the_largest_distance_from_one():
    row = {"w min": 0.8, "w max": 1.1, "w min (fp32 trainer)": 0.99, "w max (fp32 trainer)": 1.5}
    assert precision.spread(row) == pytest.approx(0.5)
    assert precision.spread(row, "") == pytest.approx(0.2)


def test_every_claim_names_a_real_arm_and_summary_column():
    for c in precision.EXPERIMENT.claims:
        assert c.arm in precision.ARMS and c.baseline in (None, *precision.ARMS), c.key
        assert c.metric in summary_columns(), c.key
    assert set(precision.EXPERIMENT.live["arms"]) <= set(precision.ARMS)
