"""GSPO and CISPO vs GRPO under off-policy stress (labkit.experiments.off_policy): per-token
gradients of PPO-clip and CISPO against hand values, the stability summary, and the direction the
runs showed on a fixed seed."""

import pandas as pd
import pytest
import torch

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


@pytest.mark.slow
def test_cispo_keeps_the_gradient_ppo_clip_silences_on_a_fixed_seed():
    torch.set_num_threads(1)
    c = op.silenced_tokens(seed=0)  # measured: 68 of 380 tokens with A != 0
    assert c["ppo zero grad, A != 0"] > 0.1 * c["tokens with A != 0"]
    assert c["ppo zero, cispo nonzero"] == c["ppo zero grad, A != 0"] == c["ppo clipped"]
    assert c["cispo zero, ppo nonzero"] == 0


@pytest.mark.slow
def test_stress_directions_on_a_fixed_seed():
    # measured (seed 0, 20 steps of STRESS, mu = 4, lr 1e-3): ratio/max GRPO 64.2, GSPO 5.1,
    # CISPO 47.8; kl/old GRPO 0.090, CISPO 0.187; final reward GRPO 0.291, CISPO 0.060.
    # CISPO's ratio/max against GRPO's (one token's extreme) is not asserted: a rounding-level
    # change of the forwards flips it, so on 20 steps it is noise.
    torch.set_num_threads(1)
    res = op.run(seeds=(0,), steps=20, progress=False)
    t = op.summary(res)
    grpo, gspo, cispo = t.index
    assert t.loc[gspo, "ratio/max"] < t.loc[grpo, "ratio/max"]  # GSPO: a tighter ratio spread
    assert t.loc[cispo, "kl/old"] > t.loc[grpo, "kl/old"]  # CISPO: no trust region, drifts further
    assert t.loc[cispo, "reward (last 1/4)"] < t.loc[grpo, "reward (last 1/4)"]  # and loses reward
    assert (
        "CISPO more stable than GRPO (smaller drawdown, final reward no lower): NOT"
        in op.verdict(res)
    )
