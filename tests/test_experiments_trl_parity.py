"""labkit.experiments.trl_beside / trl_beside_dpo / trl_parity: TRL's own code beside labkit's.

What tests/test_core_trl_parity.py does not already check: TRL's advantage code
(``_generate_and_score_completions``) and DPO loss (``DPOTrainer._compute_loss``) against
labkit's, the experiment's arms against the loss types TRL itself lists, and that the
comparison can tell two different losses apart (a check that always passes proves nothing).
"""

import math

import pytest
import torch
from trl import DPOConfig, GRPOConfig, GRPOTrainer

from labkit.core.options import DPO_LOSS_TYPES, LOSS_TYPES, SCALE_REWARDS
from labkit.experiments import trl_parity
from labkit.experiments.trl_beside import (
    Side,
    advantages_labkit,
    advantages_trl,
    grpo_labkit,
    grpo_trl,
    make_batch,
    trl_loss_types,
)
from labkit.experiments.trl_beside_dpo import dpo_labkit, dpo_trl, make_pairs
from labkit.utils import excerpt


def test_the_arms_cover_every_loss_type_trl_and_labkit_share():
    trl_grpo, trl_dpo = trl_loss_types(GRPOConfig), trl_loss_types(DPOConfig)
    assert {"grpo", "dapo", "sapo"} <= set(trl_grpo) and {"sigmoid", "ipo"} <= set(trl_dpo)
    settings = trl_parity.ARMS.values()
    grpo = {s["loss_type"] for s in settings if s["side"] == "grpo"}
    dpo = {s["loss_type"] for s in settings if s["side"] == "dpo"}
    scales = {s["scale_rewards"] for s in settings if s["side"] == "advantages"}
    assert grpo == set(trl_grpo) & set(LOSS_TYPES)
    assert dpo == set(trl_dpo) & set(DPO_LOSS_TYPES) and scales == set(SCALE_REWARDS)
    assert any(s.get("beta") for s in settings if s["side"] == "grpo")  # the k3 term


def test_claims_are_equivalence_rules_on_what_each_run_reports():
    arms = trl_parity.EXPERIMENT.arms
    assert [c.arm for c in trl_parity.CLAIMS] == list(arms)
    assert len({c.key for c in trl_parity.CLAIMS}) == len(arms)
    for c in trl_parity.CLAIMS:
        assert c.direction == 0 and c.margin == trl_parity.MARGIN and c.metric == "max |diff|"
        assert "TRL 1.16" in c.source
    assert len(trl_parity.EXPERIMENT.seeds) >= 5


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_batches_pad_tie_and_clip(seed):
    b = make_batch(seed)
    assert (b.mask == 0).any() and (b.mask.sum(1) > 0).all()  # padding, no empty row
    groups = b.rewards.view(-1, b.num_generations)
    assert (groups.std(1) == 0).any() and (groups.std(1) > 0).any()
    assert (b.advantages.view_as(groups)[groups.std(1) == 0] == 0).all()
    st = grpo_trl(b, loss_type="grpo").stats
    assert 0.02 < st["clipped"] < 0.5  # clipping binds on some tokens, not all
    seq = grpo_trl(b, loss_type="grpo", importance_sampling_level="sequence", epsilon=3e-2)
    assert 0 < seq.stats["clipped"] < 1
    assert grpo_trl(b, loss_type="cispo", epsilon_high=1.2).stats["clipped"] > 0


@pytest.mark.parametrize("scale_rewards", SCALE_REWARDS)
@pytest.mark.parametrize("seed", [0, 3])
def test_group_advantages_equal_trls(scale_rewards, seed):
    b = make_batch(seed)
    theirs = advantages_trl(b, scale_rewards).value
    ours = advantages_labkit(b, scale_rewards).value
    torch.testing.assert_close(ours, theirs, atol=1e-6, rtol=1e-6)
    assert theirs.abs().max() > 0.1  # real advantages, not 0 == 0


@pytest.mark.parametrize("loss_type", DPO_LOSS_TYPES)
@pytest.mark.parametrize("seed", [0, 5])
def test_dpo_loss_and_gradient_equal_trls(loss_type, seed):
    p = make_pairs(seed)
    theirs, ours = dpo_trl(p, loss_type, 0.1), dpo_labkit(p, loss_type, 0.1)
    torch.testing.assert_close(ours.value, theirs.value, atol=1e-5, rtol=1e-6)
    torch.testing.assert_close(ours.grad, theirs.grad, atol=1e-6, rtol=1e-6)
    scored = p.completion_mask[:, 1:].bool()
    assert (theirs.grad[~scored] == 0).all() and (theirs.grad[scored] != 0).all()
    if loss_type == "sigmoid":  # IPO's margin: TRL logs summed log-ratios, labkit what it got
        assert ours.stats["margin"] == pytest.approx(theirs.stats["margin"], abs=1e-6)


def test_the_comparison_tells_different_losses_apart():
    b, p = make_batch(1), make_pairs(1)
    pairs = [
        (grpo_trl(b, loss_type="bnpo"), grpo_labkit(b, loss_type="grpo")),
        (grpo_trl(b, loss_type="grpo", beta=0.04), grpo_labkit(b, loss_type="grpo", beta=0.0)),
        (advantages_trl(b, "batch"), advantages_labkit(b, "group")),
        (dpo_trl(p, "ipo", 0.1), dpo_labkit(p, "sigmoid", 0.1)),
    ]
    for trl, ours in pairs:
        assert trl_parity.differences(trl, ours)["max |diff|"] > 100 * trl_parity.MARGIN


def test_a_nan_on_either_side_is_an_infinite_difference():
    one, nan = Side(torch.tensor(1.0), torch.ones(2), {}), Side(torch.tensor(math.nan), None, {})
    nan.grad = torch.ones(2)
    d = trl_parity.differences(one, nan)
    assert d["|loss diff|"] == math.inf and d["max |diff|"] == math.inf


def test_one_run_logs_each_batch_and_summarises_the_largest(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_RUNS", str(tmp_path))
    ticks = []
    out = trl_parity.train(
        "dapo",
        trl_parity.ARMS["dapo"],
        seed=0,
        steps=2,
        fast=True,
        run_name="t/dapo",
        tick=lambda k, n: ticks.append(k),
    )
    assert ticks == [1, 2] and list(out.curves["step"]) == [1, 2]
    assert out.summary["max |diff|"] == out.curves["max |diff|"].max() < trl_parity.MARGIN
    assert 0 < out.summary["clipped (frac)"] < 1 and "max |adv diff|" not in out.summary


def test_the_lab_quotes_trls_lines():
    code = excerpt(GRPOTrainer._compute_loss, "coef_1 = torch.exp", "per_token_loss = -torch.min")
    assert code.startswith("# trl.trainer.grpo_trainer.GRPOTrainer._compute_loss, trl/trainer/")
    assert code.splitlines()[1] == "coef_1 = torch.exp(log_importance_weights)"
    with pytest.raises(ValueError, match="on 0 lines"):
        excerpt(GRPOTrainer._compute_loss, "no such line")
