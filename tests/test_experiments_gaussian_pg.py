"""A Gaussian policy under REINFORCE, a baseline and GAE (labkit.experiments.gaussian_pg): every
arm is a valid config, each claim names an arm and a summary column, a short run logs its
curves. The full runs: the stored result and the lab's live cell in fast mode."""

from labkit.classic.continuous import GaussianPGConfig
from labkit.experiments import gaussian_pg


def test_arms_are_valid_configs():
    assert [GaussianPGConfig(**s).advantage for s in gaussian_pg.ARMS.values()] == [
        "reward_to_go",
        "baseline",
        "gae",
    ]


def test_a_short_run_and_the_claims_find_their_columns(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_RUNS", str(tmp_path))
    out = gaussian_pg.train(
        "REINFORCE",
        {"advantage": "reward_to_go"},
        seed=0,
        steps=3,
        fast=True,
        run_name="t/r/seed-0",
        tick=lambda done, total: None,
    )
    assert out.curves["step"].tolist() == [1, 2, 3]
    assert set(gaussian_pg.EXPERIMENT.curves) <= set(out.curves)
    s = out.summary
    assert (
        s["return gain"]
        == s["return (mean policy, last 10%)"] - out.curves["return (mean policy)"].iloc[0]
    )
    assert s["gap to optimum (last 10%)"] > 0  # J* is never beaten
    assert out.curves["critic loss"].isna().all()  # plain REINFORCE trains no critic
    for c in gaussian_pg.EXPERIMENT.claims:
        assert c.arm in gaussian_pg.ARMS and c.baseline in (None, *gaussian_pg.ARMS), c.key
        assert c.metric in s, c.key
