"""Outcome vs process supervision (labkit.experiments.prm): every arm is a valid config, a
learned PRM is kept when a run is rebuilt from a checkpoint, the proxy gap, and a summary
holding every column a claim is judged on. The runs themselves: the lab's cells in fast mode
(tests/test_notebooks.py) and the stored result (tests/test_results_tables.py)."""

import pandas as pd
import pytest

from labkit.algos.config import GRPOConfig
from labkit.algos.grpo import GRPOTrainer
from labkit.algos.process import ProcessGRPOTrainer
from labkit.experiments import prm


def test_every_arm_is_a_valid_config():
    GRPOConfig(**prm.RL)
    for arm, settings in prm.ARMS.items():
        assert settings.get("learned") in (None, *prm.LEARNED), arm
        assert prm.trainer_class(settings, object()) is not None
    with pytest.raises(ValueError, match="algo"):
        prm.trainer_class({"algo": "ppo"})
    assert len(prm.EXPERIMENT.seeds) >= 5


def test_trainer_classes_bind_what_resume_does_not_pass_again():
    assert prm.trainer_class(prm.ARMS["GRPO, outcome"]) is GRPOTrainer
    assert prm.trainer_class(prm.ARMS["GRPO, process"]) is ProcessGRPOTrainer
    verifier = object()
    cls = prm.trainer_class(prm.ARMS["GRPO process, learned PRM"], verifier)
    t = cls("tiny-think", ["answer_match"], task="scratchpad", max_steps=1, **prm.RL)
    assert isinstance(t, ProcessGRPOTrainer) and t.prm is verifier


def test_summary_proxy_gap_and_every_claimed_column():
    after = {"accuracy": 0.6, "think rate": 1.0, "step correctness": 0.9, "truncated": 0.0}
    m = pd.DataFrame(
        {
            "step": [1, 2, 3, 4],
            "accuracy": [0.4, 0.4, 0.3, 0.2],
            "rewards/learned_orm/mean": [0.5, 0.5, 0.7, 0.8],
        }
    )
    s = prm.summary(m, after)
    assert s["held-out accuracy"] == 0.6
    assert s["batch accuracy (mean over the run)"] == pytest.approx(1.3 / 4)
    # score first quarter 0.5 -> last 0.8 (+0.3), accuracy 0.4 -> 0.2 (-0.2): gap 0.5
    assert s["proxy gap"] == pytest.approx(0.5)
    assert "proxy gap" not in prm.summary(m.drop(columns="rewards/learned_orm/mean"), after)
    for c in prm.EXPERIMENT.claims:
        assert c.arm in prm.ARMS and (c.baseline is None or c.baseline in prm.ARMS), c.key
        assert c.metric in s, c.key
    assert set(prm.EXPERIMENT.live["arms"]) <= set(prm.ARMS)


def test_a_short_arm_produces_its_columns_and_curves(runs):
    out = prm.train(
        "GRPO, process",
        prm.ARMS["GRPO, process"],
        seed=0,
        steps=2,
        fast=True,
        run_name="prm/x",
        tick=lambda *a: None,
    )
    assert {"held-out accuracy", "held-out truncated", "proxy gap"} - set(out.summary) == {
        "proxy gap"
    }
    held = out.curves.dropna(subset=["held-out accuracy"])
    assert list(held["step"]) == [0, 2]  # the cold start, then after RL
