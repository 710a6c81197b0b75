"""PPO as the seed writes it (labkit.experiments.ppo_seed): alpaca_farm's KL clamp and the
entropy term against hand computations, and the directions the runs showed on a fixed seed."""

import pandas as pd
import pytest
import torch

from labkit.algos.ppo import PPOTrainer
from labkit.core import kl_k1
from labkit.experiments import ppo_seed


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


def test_verdict_reads_the_table():
    cols = [
        "entropy last",
        "entropy sd",
        "kl penalty",
        "kl/k3 last",
        "vf/explained_var all",
        "vf/clipfrac all",
    ]
    t = pd.DataFrame(
        [
            [0.2, 0.01, 0.010, 0.30, 0.5, 0.1],
            [0.3, 0.01, 0.010, 0.30, 0.5, 0.1],
            [0.2, 0.01, 0.020, 0.20, 0.5, 0.1],
            [0.2, 0.01, 0.010, 0.30, 0.6, 0.0],
        ],
        columns=cols,
        index=list(ppo_seed.ARMS),
    )
    lines = ppo_seed.verdict({"table": t}).splitlines()
    assert len(lines) == 4 and all(x.startswith("REPRODUCED") for x in lines)
    t.loc["KL clamped at 0 (alpaca_farm)", "kl/k3 last"] = 0.4
    assert ppo_seed.verdicts({"table": t})["reproduced"].tolist()[2] == "not reproduced"
    t["vf/clipfrac all"] = 0.0  # the value clip never bound: the claim was not put to the test
    assert ppo_seed.verdicts({"table": t})["reproduced"].iloc[3].startswith("not tested")


@pytest.mark.slow
def test_entropy_bonus_and_clamp_on_a_fixed_seed():
    # measured (seed 0, 20 steps of PPOTrainer's defaults, 50 held-out prompts): entropy 0.421
    # with c_H = 0.05 vs 0.361; mean beta KL_t in the reward 0.0773 clamped vs 0.0710, yet the
    # clamped run ends FARTHER from pi_ref (kl/k3 0.636 vs 0.337): not the direction claimed.
    # After the merge of the chunked log-softmax and device changes (~1e-6 per log-prob) the
    # clamp's two numbers flipped (KL penalty 0.0115 vs 0.0162): on PPOTrainer's unstable
    # defaults 20 steps cannot tell the clamp from noise, so only the entropy bonus (which held
    # both times) is asserted; the clamp's mechanism is tested on one rollout above.
    torch.set_num_threads(1)
    rows = {}
    for label, kw in {
        "base": {},
        "bonus": {"entropy_coef": 0.05},
        "clamp": {"kl_clamp_min": 0.0},
    }.items():
        t = PPOTrainer("tiny", seed=0, track_kl=True, max_steps=20, **kw)
        rows[label] = ppo_seed.ppo_row(t, t.train(progress=False), 50, 0)
    b, bonus, clamp = rows["base"], rows["bonus"], rows["clamp"]
    assert bonus["entropy last"] > b["entropy last"]
    assert clamp["kl penalty"] > 0 and clamp["kl/k3 last"] > 0  # the arm ran and logged KL
