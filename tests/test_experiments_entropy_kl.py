"""Entropy and KL (labkit.experiments.entropy_kl, entropy_kl_base): the entropy bonus against a
hand computation, its wiring into GRPO's loss, and the two settings' arms and claims. The runs
themselves: the lab's live cell in fast mode (tests/test_notebooks.py) and the stored results
(tests/test_results_tables.py)."""

import math

import pandas as pd
import pytest
import torch

from labkit.algos.config import BASE_RUN, GRPOConfig, PPOConfig
from labkit.algos.grpo import GRPOTrainer
from labkit.core import entropy_bonus, entropy_from_logits
from labkit.experiments import entropy_kl, entropy_kl_base
from labkit.experiments.entropy_kl import BASE


def test_entropy_bonus_value_and_gradient_by_hand():
    # one position with p = (1/4, 1/2, 1/4): H = 1.5 ln 2; dH/dz_v = -p_v (ln p_v + H), so
    # dH/dz = (ln 2 / 8, -ln 2 / 4, ln 2 / 8); the second position is masked out
    z = torch.tensor([[[0.0, math.log(2), 0.0], [5.0, 0.0, 0.0]]], requires_grad=True)
    c, ln2 = 0.1, math.log(2)
    term = entropy_bonus(z, torch.tensor([[1, 0]]), c)
    assert float(term.detach()) == pytest.approx(-c * 1.5 * ln2)
    term.backward()
    want = -c * torch.tensor([[[ln2 / 8, -ln2 / 4, ln2 / 8], [0.0, 0.0, 0.0]]])
    assert torch.allclose(z.grad, want, atol=1e-6)
    # a mean over valid tokens: two valid positions share the weight 1/2 each
    z2 = torch.zeros(1, 2, 4)
    assert float(entropy_bonus(z2, torch.ones(1, 2), 1.0)) == pytest.approx(-math.log(4))
    # temperature: the entropy of softmax(z / tau), as the sampler drew from
    assert float(
        entropy_bonus(z.detach(), torch.tensor([[0, 1]]), 1.0, temperature=2.0)
    ) == pytest.approx(-float(entropy_from_logits(z[:, 1:].detach(), 2.0)))


def test_negative_entropy_coef_is_refused():
    with pytest.raises(ValueError, match="entropy_coef=-0.1"):
        GRPOConfig(entropy_coef=-0.1)


def first_loss(entropy_coef: float):
    """The loss GRPO hands the optimiser at its first inner update, and the step's metrics."""
    t = GRPOTrainer(
        "tiny",
        seed=3,
        max_steps=1,
        prompts_per_step=4,
        num_generations=2,
        entropy_coef=entropy_coef,
        track_kl=False,
    )
    seen, step = [], t.optimizer_step
    t.optimizer_step = lambda loss: seen.append(loss.detach()) or step(loss)
    m = t.train_step().metrics
    return float(seen[0]), m


def test_grpo_loss_subtracts_c_h_times_the_logged_entropy():
    # same seed, same rollout: the loss with the bonus is the loss without it - c_H * H_bar,
    # H_bar the trainer's own ``entropy`` metric (first update, completion tokens)
    l0, m0 = first_loss(0.0)
    l1, m1 = first_loss(0.5)
    assert m0["entropy"] == pytest.approx(m1["entropy"])
    assert l1 - l0 == pytest.approx(-0.5 * m0["entropy"], abs=1e-5)


def test_arms_are_valid_configs():
    for arm, settings in entropy_kl.ARMS.items():
        if arm in entropy_kl.KL_ARMS:
            PPOConfig(**settings)
        else:
            cfg = entropy_kl.DRIFT | settings
            GRPOConfig(**{k: v for k, v in cfg.items() if k != "reward_funcs"})
    assert "max_steps" not in entropy_kl.DRIFT  # the run's steps set the schedule's length
    assert entropy_kl.DRIFT["beta"] == 0.0  # so the plain arm is the sweep's beta = 0
    assert set(entropy_kl.BETAS.values()) <= set(entropy_kl.ARMS)


def test_every_claim_names_a_real_arm_and_summary_column():
    columns = {
        "entropy (first 10%)",
        "entropy change",
        "clip/ratio_high (run)",
        "held-out accuracy",
    } | {f"{c} (last 10%)" for c in entropy_kl.TAIL}
    for c in entropy_kl.EXPERIMENT.claims:
        assert c.arm in entropy_kl.ARMS and c.baseline in (None, *entropy_kl.ARMS), c.key
        assert c.metric in columns, c.key
    assert set(entropy_kl.EXPERIMENT.live["arms"]) <= set(entropy_kl.ARMS)


def test_frontier_orders_the_sweep_by_beta():
    s = pd.DataFrame(
        {
            "arm": ["beta 0.3", entropy_kl.BASE, "beta 0.3", "clip-higher, eps_high 0.28"],
            "seed": [0, 0, 1, 0],
            "kl/k3 (last 10%)": [0.1, 0.5, 0.3, 9.0],
        }
    )
    f = entropy_kl.frontier(s)
    assert f["beta"].tolist() == [0.0, 0.3]
    assert f["kl/k3 (last 10%)"].tolist() == pytest.approx([0.5, 0.2])


# Lab 78's two settings: entropy_kl (DRIFT, the stress setting) and entropy_kl_base (BASE_RUN).
EXPERIMENTS = (entropy_kl.EXPERIMENT, entropy_kl_base.EXPERIMENT)


def test_base_setting_is_the_base_run_and_its_arms_are_the_stress_ones():
    assert entropy_kl_base.SETTING == {k: v for k, v in BASE_RUN.items() if k != "max_steps"}
    assert entropy_kl_base.SETTING["num_iterations"] == 2
    assert entropy_kl_base.SETTING["learning_rate"] == 5e-4
    assert entropy_kl_base.SETTING["beta"] == 0.0  # the plain arm is the sweep's beta = 0
    for arm, settings in entropy_kl_base.ARMS.items():
        assert entropy_kl.ARMS[arm] == settings, arm  # the same arm as under stress
        cfg = entropy_kl_base.SETTING | settings
        GRPOConfig(**{k: v for k, v in cfg.items() if k != "reward_funcs"})
    assert set(entropy_kl.BETAS.values()) <= set(entropy_kl_base.ARMS)
    assert not set(entropy_kl.KL_ARMS) & set(entropy_kl_base.ARMS)  # left to the stress run


@pytest.mark.parametrize("exp", EXPERIMENTS, ids=lambda e: e.name)
def test_claims_name_real_arms_and_summary_columns(exp, tmp_path, monkeypatch):
    """A 2-step run's summary (fast probes) has every claimed column, finite."""
    monkeypatch.setenv("LABKIT_RUNS", str(tmp_path))
    out = exp.train(BASE, {}, seed=0, steps=2, fast=True, run_name="r", tick=lambda d, s: None)
    for c in exp.claims:
        assert c.arm in exp.arms and (c.baseline is None or c.baseline in exp.arms), c.key
        assert c.metric in out.summary and out.summary[c.metric] == out.summary[c.metric], c.key
    assert set(exp.curves) <= set(out.curves.columns)
    assert set(exp.live["arms"]) <= set(exp.arms) and len(exp.seeds) >= 5
    s = out.summary
    assert s["entropy change"] == pytest.approx(s["entropy (last 10%)"] - s["entropy (first 10%)"])


def test_the_two_settings_share_the_grpo_claims_rules():
    stress, base = EXPERIMENTS
    assert base.lab == stress.lab and base.curves == stress.curves
    # each train lives in its own module: a worker process loads that module's EXPERIMENT
    assert stress.train.__module__ == "labkit.experiments.entropy_kl"
    assert base.train.__module__ == "labkit.experiments.entropy_kl_base"
    grpo = {c.key: c for c in stress.claims if c.arm not in entropy_kl.KL_ARMS}
    assert [c.key for c in base.claims] == list(grpo)
    assert [c.rule for c in base.claims] == [grpo[c.key].rule for c in base.claims]
    texts = [c.text for e in EXPERIMENTS for c in e.claims]  # README rows stay distinct
    assert len(set(texts)) == len(texts)


@pytest.mark.parametrize(
    ("module", "setting"),
    [(entropy_kl, entropy_kl.DRIFT), (entropy_kl_base, entropy_kl_base.SETTING)],
    ids=["stress", "base"],
)
def test_each_train_runs_its_grpo_arms_at_its_setting(module, setting, monkeypatch):
    seen = {}

    def fake(model, settings, **kw):
        seen.update(kw | settings)
        raise RuntimeError("stop")

    monkeypatch.setattr(entropy_kl, "grpo_run", fake)
    with pytest.raises(RuntimeError):
        module.train("beta 0.3", {"beta": 0.3}, seed=0, steps=2, fast=True, run_name="r", tick=None)
    assert seen["learning_rate"] == setting["learning_rate"] and seen["beta"] == 0.3
    assert seen["num_iterations"] == setting["num_iterations"] and seen["track_kl"]
