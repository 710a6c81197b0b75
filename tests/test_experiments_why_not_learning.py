"""Why isn't it learning (labkit.experiments.why_not_learning): every arm is a valid config, each
claim names a real arm and a summary column, the summary reads a run log and the doctor, the
format reward never fires on bare digits, and the sandbox report. The runs themselves: the lab's
live cell in fast mode (tests/test_notebooks.py) and the stored result."""

import pandas as pd
import pytest

from labkit.algos.config import BASE_RUN, GRPOConfig
from labkit.experiments import why_not_learning as wnl
from labkit.runs.log import RunLog


def test_the_format_reward_needs_the_tags():
    assert wnl.answer_format(["42", "<answer>42</answer>"], answer=["42", "42"]) == [0.0, 1.0]


def test_arms_are_valid_configs_of_the_labs_base_run():
    base = {k: v for k, v in BASE_RUN.items() if k != "reward_funcs"}
    for arm in wnl.ARMS.values():
        GRPOConfig(**(base | {k: v for k, v in arm.items() if k != "reward_funcs"}))
    assert set(wnl.ARMS) == set(wnl.EXPECTED)


def fake_log(accuracy, zero, grad, truncated=0.0):
    n = len(accuracy)
    metrics = pd.DataFrame(
        {
            "step": range(1, n + 1),
            "accuracy": accuracy,
            "adv/frac_zero_std": [zero] * n,
            "adv/mean_abs": [0.0 if zero == 1 else 0.5] * n,
            "grad_norm": [grad] * n,
            "len/truncated_frac": [truncated] * n,
        }
    )
    return RunLog(config={"learning_rate": 5e-4}, records={"metrics": metrics.to_dict("records")})


def test_summary_reads_thirds_and_the_doctor():
    s = wnl.summary(fake_log([0.3, 0.3, 0.4, 0.5, 0.6, 0.6], 0.2, 1.5), set())
    assert s["accuracy, first third"] == pytest.approx(0.3)
    assert s["accuracy gain"] == pytest.approx(0.3)
    assert s["doctor misses the fault"] == 0.0
    stalled = wnl.summary(fake_log([0.4] * 6, 1.0, 0.0, truncated=1.0), {"truncation"})
    assert stalled["grad_norm"] == 0 and stalled["doctor warnings"] > 0
    assert stalled["doctor misses the fault"] == 0.0  # the doctor names the truncation
    assert wnl.summary(fake_log([0.4] * 6, 1.0, 0.0), {"truncation"})["doctor misses the fault"]


def test_every_claim_names_a_real_arm_and_summary_column():
    columns = set(wnl.summary(fake_log([0.4] * 6, 0.2, 1.0), set()))
    for c in wnl.EXPERIMENT.claims:
        assert c.arm in wnl.ARMS and c.baseline in (None, *wnl.ARMS), c.key
        assert c.metric in columns, c.key
    assert set(wnl.EXPERIMENT.live["arms"]) <= set(wnl.ARMS)
    assert len(wnl.EXPERIMENT.seeds) >= 5


@pytest.mark.slow
def test_the_sandbox_report_contains_every_case():
    t = wnl.sandbox_report().set_index("case")["status"].to_dict()
    assert t == {
        "correct code": "passed",
        "infinite loop": "timeout",
        "fork bomb": "failed",
        "huge allocation": "memory",
        "write outside": "failed",
        "network": "failed",
    }
