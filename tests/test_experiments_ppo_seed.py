"""PPO as the seed writes it (labkit.experiments.ppo_seed): alpaca_farm's KL clamp and the
entropy term against hand computations, and the experiment's arms and claims. The runs
themselves: the lab's live cell in fast mode (tests/test_notebooks.py) and the stored result
(tests/test_results_tables.py)."""

import pandas as pd
import pytest
import torch

from labkit.algos.config import PPOConfig
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


def test_arms_are_valid_configs_and_claims_name_real_columns():
    for settings in ppo_seed.ARMS.values():
        PPOConfig(**settings)
    columns = {"entropy (first 10%)", "kl penalty (last 10%)", "held-out accuracy"}
    columns |= {f"{c} (last 10%)" for c in ppo_seed.TAIL} | {
        f"{c} (run)" for c in ppo_seed.RUN_MEANS
    }
    for c in ppo_seed.EXPERIMENT.claims:
        assert c.arm in ppo_seed.ARMS and c.baseline in ppo_seed.ARMS, c.key
        assert c.metric in columns, c.key
    assert set(ppo_seed.EXPERIMENT.live["arms"]) <= set(ppo_seed.ARMS)


def test_kl_penalty_reads_the_last_rows_only():
    tokens = pd.DataFrame({"reward": [[-9.0, 0.0], [-0.1, -0.3, 1.0], [-0.2, 0.5]]})
    assert ppo_seed.kl_penalty(tokens, 2) == pytest.approx(0.2)
    assert ppo_seed.kl_penalty(tokens, 3) == pytest.approx(9.6 / 4)
