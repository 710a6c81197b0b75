"""PPO's critic settings (labkit.experiments.ppo_critic): each arm changes one PPOConfig field
from the defaults, the answer-token diagnostic on a hand case, claims on real arms and summary
columns, and a short warm-up arm that produces them. The full run: the stored result."""

import pandas as pd
import pytest
import torch

from labkit.algos.config import PPOConfig
from labkit.experiments import ppo_critic as pc
from labkit.experiments import prm


def test_each_arm_changes_one_critic_setting_from_the_defaults():
    base = PPOConfig(**prm.RL)
    assert (base.lam, base.whiten_advantages, base.value_warmup_steps) == (0.95, True, 0)
    for arm, settings in pc.ARMS.items():
        fields = {k: v for k, v in settings.items() if k != "step_weight"}
        cfg = PPOConfig(**prm.RL, **fields)
        changed = [
            f
            for f in ("lam", "whiten_advantages", "value_warmup_steps")
            if getattr(cfg, f) != getattr(base, f)
        ]
        assert len(changed) == (0 if arm == pc.DEFAULTS else 1), arm
        assert settings["step_weight"] == pc.STEP_WEIGHT == 0.25
        assert pc.trainer_class(settings).token_score is not None


def test_region_advantages_split_the_answer_from_what_comes_before():
    text = "<think>1+2=3</think><answer>3</answer>"  # 38 characters, the answer from 20
    T = 40
    adv = torch.zeros(1, T)
    adv[0, :20], adv[0, 20:39] = 1.0, -2.0  # 19 answer tokens: 18 characters + eos
    mask = torch.ones(1, T)
    mask[0, 39] = 0  # padding
    r = pc.region_advantages([text], adv, mask)
    assert r == {pc.ANSWER: pytest.approx(-2.0), pc.BEFORE: pytest.approx(1.0)}


def test_claims_name_arms_and_summary_columns():
    after = {"accuracy": 0.5, "think rate": 0.5, "step correctness": 0.5, "truncated": 0.1}
    m = pd.DataFrame({"step": [1, 2], "accuracy": [0.5, 0.6]})
    curves = m.assign(**{pc.ANSWER: [-1.0, 0.0], pc.BEFORE: [0.5, 0.5]})
    curves["len/truncated_frac"] = [0.0, 0.2]
    columns = set(prm.summary(m, after)) | set(pc.critic_summary(curves))
    for c in pc.EXPERIMENT.claims:
        assert c.metric in columns and c.arm in pc.ARMS and c.baseline in pc.ARMS, c.key
    assert set(pc.EXPERIMENT.live["arms"]) <= set(pc.ARMS) and len(pc.EXPERIMENT.seeds) >= 5


def test_a_short_warm_up_arm_produces_its_columns(runs):
    arm = "PPO, step rewards, critic warm-up"
    out = pc.train(
        arm, pc.ARMS[arm], seed=0, steps=2, fast=True, run_name="pc/x", tick=lambda *a: None
    )
    assert {"held-out accuracy", "held-out truncated", "answer advantage (first steps)"} <= set(
        out.summary
    )
    assert {pc.ANSWER, pc.BEFORE, "vf/explained_var"} <= set(out.curves)
    assert out.curves["vf/warmup_loss"].notna().sum() == 1  # warmed up before step 1 only
