"""GSPO and CISPO vs GRPO under off-policy stress (labkit.experiments.off_policy): per-token
gradients of PPO-clip and CISPO against hand values, the stability summary, and the experiment's
arms and claims. The runs themselves: the lab's live cell in fast mode (tests/test_notebooks.py)
and the stored result (tests/test_results_tables.py)."""

import math

import pandas as pd
import pytest
import torch

from labkit.algos.config import GRPOConfig
from labkit.experiments import off_policy as op


def test_token_grads_against_hand_values():
    # one sequence of 4 tokens, A = +1, ratios 1.5 (above 1 + eps: PPO-clip silences it), 1.1,
    # 0.5 (below 1 - eps but A > 0: PPO keeps it), 7 (above CISPO's cap 5: CISPO weight 5)
    old = torch.zeros(1, 4)
    logp = torch.log(torch.tensor([[1.5, 1.1, 0.5, 7.0]]))
    g_ppo, g_cispo, clipped = op.token_grads(logp, old, torch.tensor([1.0]), torch.ones(1, 4))
    w = 1 / 4  # loss_type grpo: 1 / (B |o|); cispo: 1 / tokens, the same here
    # d/dlogp of -rho A w is -rho A w; clipped terms are constant
    assert g_ppo.tolist()[0] == pytest.approx([0.0, -1.1 * w, -0.5 * w, 0.0])
    assert clipped.tolist() == [[1.0, 0.0, 0.0, 1.0]]
    # CISPO: -sg(min(rho, 5)) A w log pi -> gradient -min(rho, 5) A w on every token
    assert g_cispo.tolist()[0] == pytest.approx([-1.5 * w, -1.1 * w, -0.5 * w, -5.0 * w])
    c = op.count_silenced(g_ppo, g_cispo, clipped, torch.tensor([1.0]), torch.ones(1, 4))
    assert c["ppo zero, cispo nonzero"] == 2 and c["cispo zero, ppo nonzero"] == 0


def test_negative_advantage_low_ratio_is_silenced_by_ppo_only():
    old = torch.zeros(2, 2)
    logp = torch.log(torch.tensor([[0.5, 1.0], [1.0, 1.0]]))  # token (0, 0): rho 0.5, A < 0
    adv = torch.tensor([-1.0, 0.0])  # the second sequence has no advantage: nobody pushes it
    g_ppo, g_cispo, clipped = op.token_grads(logp, old, adv, torch.ones(2, 2))
    c = op.count_silenced(g_ppo, g_cispo, clipped, adv, torch.ones(2, 2))
    assert c == {
        "valid tokens": 4,
        "tokens with A != 0": 2,
        "ppo clipped": 1,
        "ppo zero grad": 3,
        "ppo zero grad, A != 0": 1,
        "ppo zero, cispo nonzero": 1,
        "cispo zero, ppo nonzero": 0,
    }


def test_stability_reads_drawdown_and_spread():
    m = pd.DataFrame(
        {
            "reward/mean": [0.2, 0.6, 0.3, 0.5, 0.7, 0.8, 0.8, 0.9],
            "accuracy": 0.5,
            "ratio/max": [1, 2, 3, 1, 1, 1, 1, 1],
            "ratio/min": [1, 0.5, 0.2, 1, 1, 1, 1, 1],
            "kl/old": 0.1,
            "clip/region": 0.2,
        }
    )
    s = op.stability(m, window=1)
    assert s["drawdown"] == pytest.approx(0.3)  # 0.6 -> 0.3
    assert s["reward (last 1/4)"] == pytest.approx(0.85)
    assert (s["ratio/max"], s["ratio/min"]) == (3, 0.2)


def test_arms_are_valid_configs_and_claims_name_real_columns():
    for settings in op.OBJECTIVES.values():
        GRPOConfig(**(op.STRESS | settings))
    m = pd.DataFrame(
        {"reward/mean": [0.2, 0.3], "accuracy": 0.5, "ratio/max": 2.0, "ratio/min": 0.5}
    ).assign(**{"kl/old": 0.1, "clip/region": 0.1})
    counts = op.count_silenced(*op.token_grads(*HAND), HAND[2], HAND[3])
    columns = set(op.stability(m)) | set(op.silenced_summary(counts))
    for c in op.EXPERIMENT.claims:
        assert c.arm in op.ARMS and c.baseline in (None, *op.ARMS), c.key
        assert c.metric in columns, c.key
    assert set(op.EXPERIMENT.live["arms"]) <= set(op.ARMS)
    assert op.stability(m)["log10 ratio/max"] == pytest.approx(math.log10(2.0))


HAND = (torch.log(torch.tensor([[1.5, 0.5]])), torch.zeros(1, 2), torch.ones(1), torch.ones(1, 2))
"""A batch of one sequence: ratios 1.5 (PPO-clip silences it) and 0.5, A = +1."""
