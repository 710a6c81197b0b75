"""AlphaZero-style self-play against random and pure MCTS (labkit.experiments.alphazero): the
control arm does not train, each claim names an arm and a summary column, and the match
summary's rates add up. The full runs: the stored result and the lab's live cell in fast mode."""

import pytest

from labkit.classic.self_play import AlphaZeroConfig
from labkit.experiments import alphazero


def test_a_short_run_of_each_arm(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_RUNS", str(tmp_path))
    tick = lambda done, total: None
    outs = {
        arm: alphazero.train(arm, s, seed=0, steps=1, fast=True, run_name=f"t/{arm}", tick=tick)
        for arm, s in alphazero.ARMS.items()
    }
    assert not AlphaZeroConfig(**alphazero.ARMS["untrained network"]).train
    assert outs["untrained network"].summary["optimal move rate gain"] == 0.0
    assert outs["untrained network"].curves["loss/value"].isna().all()
    for out in outs.values():
        s = out.summary
        for who in ("random", "pure MCTS"):
            rates = [s[f"{k} rate vs {who}"] for k in ("win", "draw", "loss")]
            assert sum(rates) == pytest.approx(1.0)
            assert s[f"score vs {who} - 1/2"] == pytest.approx(rates[0] + rates[1] / 2 - 0.5)
        assert out.curves["step"].tolist() == [0, 1]
    for c in alphazero.EXPERIMENT.claims:
        assert c.arm in alphazero.ARMS and c.baseline in (None, *alphazero.ARMS), c.key
        assert c.metric in outs[c.arm].summary, c.key
