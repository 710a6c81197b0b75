"""Double and dueling DQN on the maximization-bias chain (labkit.experiments.double_dqn): every
arm is a valid config, each claim names an arm and a summary column the experiment produces,
and one short run writes its curves as it goes. The full runs: the stored result
(tests/test_results_tables.py) and the lab's live cell in fast mode (tests/test_notebooks.py)."""

import json

from labkit.classic.dqn import DQNConfig
from labkit.experiments import double_dqn
from labkit.runs.log import runs_root


def test_arms_are_valid_configs_differing_from_dqn_in_one_piece():
    for settings in double_dqn.ARMS.values():
        DQNConfig(**settings)
        assert len(settings) <= 1


def test_a_short_run_logs_its_curves_and_the_claims_find_their_columns(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_RUNS", str(tmp_path))
    ticks = []
    out = double_dqn.train(
        "Double DQN",
        double_dqn.ARMS["Double DQN"],
        seed=0,
        steps=300,
        fast=True,
        run_name="t/double/seed-0",
        tick=lambda done, total: ticks.append(done),
    )
    rows = [json.loads(x) for x in (runs_root() / "t/double/seed-0/metrics.jsonl").open()]
    assert [r["step"] for r in rows] == out.curves["step"].tolist() == [50 * k for k in range(1, 7)]
    assert ticks[-1] == 300 and set(double_dqn.EXPERIMENT.curves) <= set(out.curves)
    for c in double_dqn.EXPERIMENT.claims:
        assert c.arm in double_dqn.ARMS and c.baseline in (None, *double_dqn.ARMS), c.key
        assert c.metric in out.summary, c.key
    assert set(double_dqn.EXPERIMENT.live["arms"]) <= set(double_dqn.ARMS)
    assert len(double_dqn.EXPERIMENT.seeds) >= 5
