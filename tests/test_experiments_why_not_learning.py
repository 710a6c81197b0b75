"""Why isn't it learning (labkit.experiments.why_not_learning): the fault runs have no signal and
are named by the doctor, the healthy run learns from its groups and gets no warning (fast mode,
seed 0, as measured); the format reward never fires on bare digits; the sandbox report."""

import pytest

from labkit.experiments import why_not_learning as wnl


def test_the_format_reward_needs_the_tags():
    assert wnl.answer_format(["42", "<answer>42</answer>"], answer=["42", "42"]) == [0.0, 1.0]


@pytest.mark.slow
def test_faults_have_no_signal_and_are_named_the_healthy_run_is_not(runs):
    res = wnl.run(fast=True, seed=0)
    t = wnl.results(res).set_index("run")
    assert t.loc["format never matched", "zero-spread groups"] == 1.0
    assert t.loc["truncated", "truncated"] == 1.0
    assert t.loc["healthy", "zero-spread groups"] < 0.5
    assert t.loc["healthy", "doctor"] == "-"
    assert wnl.verdict(res).startswith("reproduced"), wnl.verdict(res)


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
