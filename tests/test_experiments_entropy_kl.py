"""Entropy and KL (labkit.experiments.entropy_kl): the entropy bonus against a hand computation,
its wiring into GRPO's loss, and the directions the runs showed on a fixed seed."""

import math

import pandas as pd
import pytest
import torch

from labkit.algos.config import GRPOConfig
from labkit.algos.grpo import GRPOTrainer
from labkit.core import entropy_bonus, entropy_from_logits
from labkit.experiments import entropy_kl


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


def fake(entropy_last, kl, reward):
    e = pd.DataFrame(
        {
            "arm": list(entropy_kl.ENTROPY_ARMS),
            "entropy first": 0.33,
            "entropy last": entropy_last,
            "entropy sd": 0.01,
            "heldout acc": 0.5,
        }
    )
    b = pd.DataFrame(
        {
            "arm": [f"beta {x}" for x in entropy_kl.BETAS],
            "kl/k3 last": kl,
            "kl/k1 last": kl,
            "reward last": reward,
        }
    )
    p = pd.DataFrame(
        {
            "arm": list(entropy_kl.KL_ARMS),
            "kl/k3 last": [0.1, 0.01, 0.02],
            "reward last": [0.8, 0.7, 0.75],
        }
    )
    return {
        "entropy": e.set_index("arm"),
        "beta": b.set_index("arm"),
        "placement": p.set_index("arm"),
    }


def test_verdict_reads_the_tables():
    ok = fake([0.2, 0.25, 0.3, 0.22], [0.2, 0.1, 0.05, 0.01, 0.0], [0.8, 0.8, 0.7, 0.6, 0.5])
    lines = entropy_kl.verdict(ok).splitlines()
    assert len(lines) == 8 and all(x.startswith("REPRODUCED") for x in lines)
    bad = fake([0.2, 0.19, 0.3, 0.22], [0.2, 0.1, 0.15, 0.01, 0.0], [0.8, 0.8, 0.7, 0.6, 0.5])
    v = entropy_kl.verdicts(bad).set_index("claim")["reproduced"]
    assert v["clip-higher, eps_high 0.28 ends with higher entropy than GRPO"] == "not reproduced"
    assert v["final KL falls as beta rises (kl/k3)"] == "not reproduced"


@pytest.fixture(scope="module")
def short_runs():
    """20 steps of ``DRIFT`` (seed 0, 50 held-out prompts) per arm: the rows of the table."""
    torch.set_num_threads(1)
    arms = {
        "base": {},
        "clip-higher": {"epsilon_high": 0.28},
        "bonus": {"entropy_coef": 0.05},
        "beta 0.3": {"beta": 0.3},
    }
    return {
        k: entropy_kl.train(GRPOTrainer, k, 20, 0, 50, **(entropy_kl.DRIFT | kw))[1]
        for k, kw in arms.items()
    }


@pytest.mark.slow
def test_entropy_falls_and_what_holds_it_on_a_fixed_seed(short_runs):
    # measured (seed 0, 20 steps): entropy 0.352 -> 0.296 plain; 0.281 with clip-higher; 0.520
    # with c_H = 0.05 (the bonus overshoots: entropy rises above the start, reward 0.276 vs
    # 0.423). Clip-higher vs plain is not asserted: a rounding-level change of the forwards
    # flips it, and in full mode it is higher on 1 of 3 seeds only (README: not reproduced).
    b, bonus = short_runs["base"], short_runs["bonus"]
    assert b["entropy last"] < b["entropy first"] - 0.05
    assert bonus["entropy last"] > bonus["entropy first"] > b["entropy last"]
    assert bonus["reward last"] < b["reward last"]


@pytest.mark.slow
def test_beta_keeps_pi_close_to_pi_ref_on_a_fixed_seed(short_runs):
    # measured (seed 0, 20 steps): kl/k3 0.345 at beta 0, 0.117 at beta 0.3
    assert short_runs["beta 0.3"]["kl/k3 last"] < 0.5 * short_runs["base"]["kl/k3 last"]
