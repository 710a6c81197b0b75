"""Labs 80 and 81 at their base setting (labkit.experiments.off_policy_base, v32_tricks_base):
the setting is the labs' base GRPO run with mu > 1, the base experiments differ from the stress
ones (off_policy, v32_tricks) only in the setting and the precondition claim, and their claims
name real arms and summary columns. The runs themselves: the labs' live cells in fast mode
(tests/test_notebooks.py) and the stored results (tests/test_results_tables.py)."""

import pandas as pd
import pytest

from labkit.algos.config import BASE_RUN, GRPOConfig
from labkit.experiments import arms, off_policy, off_policy_base, v32_tricks, v32_tricks_base

PAIRS = (
    (off_policy_base.EXPERIMENT, off_policy.EXPERIMENT),
    (v32_tricks_base.EXPERIMENT, v32_tricks.EXPERIMENT),
)
BASE = off_policy_base.BASE_SETTING


def test_the_base_setting_is_the_labs_base_run_with_mu_above_1():
    for k in ("learning_rate", "num_iterations", "num_generations", "prompts_per_step", "beta"):
        assert BASE[k] == BASE_RUN[k], k
    cfg = GRPOConfig(**BASE)
    assert cfg.num_iterations > 1  # the 2nd update of each batch is off-policy: ratios leave 1
    assert (
        cfg.lr_scheduler_type == "linear" and cfg.learning_rate < off_policy.STRESS["learning_rate"]
    )
    for settings in off_policy.OBJECTIVES.values():
        GRPOConfig(**(BASE | settings))
    for settings in v32_tricks.ARMS.values():
        GRPOConfig(**(BASE | {"loss_type": "grpo"} | settings))
    # the probe counts on the mu-th update: mu - 1 PPO-clip updates first
    assert off_policy_base.ARMS[off_policy.PROBE] == {"updates": BASE["num_iterations"] - 1}


@pytest.mark.parametrize("pair", PAIRS, ids=lambda p: p[0].name)
def test_base_and_stress_differ_only_in_the_setting(pair):
    base, stress = pair
    assert list(base.arms) == list(stress.arms) and base.lab == stress.lab
    assert base.steps == stress.steps and base.curves == stress.curves
    # each train lives in its own module: a worker process loads that module's EXPERIMENT
    assert base.train.__module__ == f"labkit.experiments.{base.name}"
    assert stress.train.__module__ == f"labkit.experiments.{stress.name}"
    first, *rest = base.claims  # the precondition, then the stress experiment's claims
    assert first.key == "grpo-trains" and first.metric == "reward gain" and first.baseline is None
    assert [c.rule for c in rest] == [c.rule for c in stress.claims]
    assert [c.key for c in rest] == [c.key for c in stress.claims]
    assert set(base.live["arms"]) <= set(base.arms) and len(base.seeds) >= 5


def test_claim_texts_stay_distinct_in_the_readme():
    texts = [c.text for pair in PAIRS for e in pair for c in e.claims]
    assert len(set(texts)) == len(texts)


def test_reward_gain_is_the_last_quarter_over_the_first_5_steps():
    r = [0.1, 0.2, 0.3, 0.2, 0.2, 0.4, 0.5, 0.6]  # first 5: 0.2; last 2 (a quarter): 0.55
    m = pd.DataFrame({"reward/mean": r, "accuracy": 0.5, "ratio/max": 2.0, "ratio/min": 0.5})
    s = off_policy.stability(m.assign(**{"kl/old": 0.1, "clip/region": 0.1}))
    assert s["reward gain"] == pytest.approx(0.35)


def test_base_runs_and_probe_use_the_base_setting(monkeypatch):
    seen = []

    def fake_run(model, settings, **kw):
        seen.append(kw)
        raise RuntimeError("stop")

    monkeypatch.setattr(arms, "grpo_run", fake_run)  # off_policy.setting_run -> arms.addition_run
    for exp, arm in ((off_policy_base, off_policy.CISPO), (v32_tricks_base, v32_tricks.KEPT)):
        with pytest.raises(RuntimeError):
            exp.train(
                arm, exp.EXPERIMENT.arms[arm], seed=0, steps=2, fast=True, run_name="r", tick=None
            )
    for kw in seen:
        assert kw["learning_rate"] == 5e-4 and kw["num_iterations"] == 2, kw
    probes = []
    monkeypatch.setattr(
        off_policy, "silenced_tokens", lambda **kw: probes.append(kw) or {"tokens with A != 0": 0}
    )
    monkeypatch.setattr(off_policy, "silenced_summary", lambda c: c)
    off_policy_base.train(
        off_policy.PROBE,
        off_policy_base.ARMS[off_policy.PROBE],
        seed=3,
        steps=2,
        fast=True,
        run_name="r",
        tick=lambda d, s: None,
    )
    assert probes == [{"seed": 3, "updates": 1, "stress": BASE}]


@pytest.mark.parametrize("exp", [p[0] for p in PAIRS], ids=lambda e: e.name)
def test_claims_name_real_arms_and_summary_columns(exp, tmp_path, monkeypatch):
    """A 2-step run of plain GRPO and the probe at the base setting have every claimed column."""
    monkeypatch.setenv("LABKIT_RUNS", str(tmp_path))
    plain, probe = next(iter(exp.arms)), next(a for a in exp.arms if a.startswith("probe"))
    columns = {}
    for arm in (plain, probe):
        out = exp.train(
            arm, exp.arms[arm], seed=0, steps=2, fast=True, run_name=arm[:4], tick=lambda d, s: None
        )
        columns |= out.summary
    for c in exp.claims:
        assert c.arm in exp.arms and c.baseline in (None, *exp.arms), c.key
        assert c.metric in columns and columns[c.metric] == columns[c.metric], c.key
