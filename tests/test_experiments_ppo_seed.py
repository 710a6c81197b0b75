"""PPO as the seed writes it (labkit.experiments.ppo_seed, ppo_seed_stress): alpaca_farm's KL
clamp and the entropy term against hand computations, the two settings, and the experiments'
arms, claims and summary. The runs themselves: the lab's live cell in fast mode
(tests/test_notebooks.py) and the stored results (tests/test_results_tables.py)."""

import pandas as pd
import pytest
import torch

from labkit.algos.config import PPOConfig
from labkit.algos.ppo import PPOTrainer
from labkit.core import kl_k1
from labkit.experiments import ppo_seed, ppo_seed_stress


def test_kl_clamp_min_floors_the_per_token_kl_of_the_reward():
    # alpaca_farm: kl = clamp(logp - ref_logp, min=0); r_t = -beta kl_t, + r(x, y) at the end
    tr = PPOTrainer(prompts_per_step=4, num_generations=2, max_steps=3, beta=0.5, kl_clamp_min=0.0)
    tr.step()  # move the policy away from pi_ref
    r = tr.prepare(tr.collect())
    k1 = kl_k1(r.old_logp, r.ref_logp) * r.loss_mask  # [B, T]
    assert (k1 < 0).any() and (k1 > 0).any()  # the clamp has something to remove
    want = -0.5 * k1.clamp(min=0.0)
    want[torch.arange(len(r)), r.lengths - 1] += r.rewards
    assert torch.allclose(r.token_rewards, want, atol=1e-6)
    tr.update(kl_clamp_min=None)  # off: the plain k1 of InstructGPT
    plain = -0.5 * k1
    plain[torch.arange(len(r)), r.lengths - 1] += r.rewards
    assert torch.allclose(tr.token_rewards(r), plain, atol=1e-6)


def first_loss(**kw):
    """PPO's first minibatch loss and the step's metrics (``entropy``: that minibatch's)."""
    t = PPOTrainer("tiny", seed=3, max_steps=1, prompts_per_step=4, num_generations=2, **kw)
    seen, step = [], t.optimizer_step
    t.optimizer_step = lambda loss: seen.append(loss.detach()) or step(loss)
    m = t.train_step().metrics
    return float(seen[0]), m


def test_ppo_loss_is_policy_plus_value_minus_c_h_entropy():
    l0, m0 = first_loss()
    l1, m1 = first_loss(entropy_coef=0.5)
    assert m0["entropy"] == pytest.approx(m1["entropy"])
    assert l1 - l0 == pytest.approx(-0.5 * m0["entropy"], abs=1e-5)


EXPERIMENTS = (ppo_seed.EXPERIMENT, ppo_seed_stress.EXPERIMENT)


def test_arms_are_valid_configs_at_both_settings():
    for setting in (ppo_seed.BASE_SETTING, ppo_seed.STRESS_SETTING):
        for settings in ppo_seed.ARMS.values():
            PPOConfig(**setting, **settings)
    assert PPOConfig(**ppo_seed.STRESS_SETTING).learning_rate == 1e-3  # the defaults as they are
    assert PPOConfig(**ppo_seed.BASE_SETTING).learning_rate == 3e-4


@pytest.mark.parametrize("exp", EXPERIMENTS, ids=lambda e: e.name)
def test_claims_name_real_arms_and_summary_columns(exp, tmp_path, monkeypatch):
    """A 2-step run's summary (fast probes) has every claimed column, finite."""
    monkeypatch.setenv("LABKIT_RUNS", str(tmp_path))
    out = exp.train(
        ppo_seed.BASE, {}, seed=0, steps=2, fast=True, run_name="r", tick=lambda d, s: None
    )
    for c in exp.claims:
        assert c.arm in exp.arms and (c.baseline is None or c.baseline in exp.arms), c.key
        assert c.metric in out.summary and out.summary[c.metric] == out.summary[c.metric], c.key
    assert set(exp.curves) <= set(out.curves.columns)
    assert set(exp.live["arms"]) <= set(exp.arms) and len(exp.seeds) >= 5
    s = out.summary
    assert s["reward gain"] == pytest.approx(
        s["reward/mean (last 10%)"] - s["reward/mean (first 10%)"]
    )
    assert s["held-out gain"] == pytest.approx(
        s["held-out accuracy"] - ppo_seed.cold_start_accuracy(ppo_seed.HELDOUT["fast"])
    )


def test_the_two_experiments_differ_only_in_the_setting():
    base, stress = EXPERIMENTS
    assert base.arms == stress.arms and base.lab == stress.lab
    # each train lives in its own module: a worker process loads that module's EXPERIMENT
    assert base.train.__module__ == "labkit.experiments.ppo_seed"
    assert stress.train.__module__ == "labkit.experiments.ppo_seed_stress"
    assert [c.rule for c in base.claims] == [c.rule for c in stress.claims]
    texts = [c.text for e in EXPERIMENTS for c in e.claims]  # README rows stay distinct
    assert len(set(texts)) == len(texts)


def test_kl_penalty_reads_the_last_rows_only():
    tokens = pd.DataFrame({"reward": [[-9.0, 0.0], [-0.1, -0.3, 1.0], [-0.2, 0.5]]})
    assert ppo_seed.kl_penalty(tokens, 2) == pytest.approx(0.2)
    assert ppo_seed.kl_penalty(tokens, 3) == pytest.approx(9.6 / 4)


def test_an_arm_of_its_own_overrides_the_settings_lr(monkeypatch):
    seen = {}

    def fake(cls, run_name, steps, tick, **kw):
        seen.update(kw)
        raise RuntimeError("stop")

    monkeypatch.setattr(ppo_seed, "resume_or_start", fake)
    with pytest.raises(RuntimeError):
        ppo_seed.train(
            "mine", {"learning_rate": 6e-4}, seed=0, steps=2, fast=True, run_name="r", tick=None
        )
    assert seen["learning_rate"] == 6e-4 and seen["track_kl"]
