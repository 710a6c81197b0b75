"""PG, TRPO, PPO-clip and PPO-KL on a tabular policy: each update does what its rule says."""

import pytest
import torch

from labkit.classic.envs import gridworld
from labkit.classic.pg import advantages, pg_loss, rollout
from labkit.classic.trpo import (
    TrustRegionConfig,
    pg_update,
    surrogate,
    train_trust_region,
    trpo_update,
)
from labkit.core.kl_control import adaptive_kl_beta

GRID = gridworld(slip=0.2, step_reward=-0.02)


def a_batch(seed=0):
    theta = torch.randn(GRID.n_states, GRID.n_actions, generator=torch.Generator().manual_seed(9))
    b = rollout(GRID, theta, 8, 30, torch.Generator().manual_seed(seed))
    adv, _ = advantages(b, "gae", 1.0, 0.95, torch.zeros(GRID.n_states))
    return theta, b, adv


def test_surrogate_gradient_at_theta_old_is_the_policy_gradient():
    theta, b, adv = a_batch()
    th = theta.clone().requires_grad_(True)
    L, kl = surrogate(th, theta, b, adv)
    (gL,) = torch.autograd.grad(L, th)
    th2 = theta.clone().requires_grad_(True)
    loss, _ = pg_loss(th2, b, adv)
    (gpg,) = torch.autograd.grad(loss, th2)
    torch.testing.assert_close(gL, -gpg)
    assert float(kl.detach()) == 0.0


def test_pg_update_is_one_gradient_ascent_step():
    theta, b, adv = a_batch()
    cfg = TrustRegionConfig(method="pg", learning_rate=0.5)
    new, st = pg_update(theta, b, adv, cfg)
    th = theta.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(surrogate(th, theta, b, adv)[0], th)
    torch.testing.assert_close(new, theta + 0.5 * g)
    assert st["passes"] == 1


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_trpo_update_improves_the_surrogate_within_delta(seed):
    theta, b, adv = a_batch(seed)
    cfg = TrustRegionConfig(delta=0.01)
    new, st = trpo_update(theta, b, adv, cfg)
    L0, _ = surrogate(theta, theta, b, adv)
    L1, kl = surrogate(new, theta, b, adv)
    assert st["trpo/accepted"] == 1.0
    assert float(kl) <= 0.01 + 1e-12 and float(L1) > float(L0)
    assert float(kl) == pytest.approx(st["trpo/kl"]) and float(L1 - L0) == pytest.approx(
        st["trpo/improve"]
    )


def test_every_trpo_update_respects_the_constraint():
    _, recs = train_trust_region(GRID, TrustRegionConfig(iterations=8, delta=0.01))
    assert all(r["kl"] <= 0.01 + 1e-9 for r in recs)
    assert all(r["passes"] >= 3 for r in recs)


def test_ppo_kl_beta_follows_the_adaptive_rule():
    cfg = TrustRegionConfig(method="ppo_kl", iterations=6, learning_rate=0.1, d_targ=0.01)
    _, recs = train_trust_region(GRID, cfg)
    beta = cfg.beta
    for r in recs:  # each update used the beta the previous one's d set
        assert r["beta"] == beta
        beta = adaptive_kl_beta(beta, r["kl"], 0.01)
    fixed = TrustRegionConfig(method="ppo_kl", iterations=3, kl_controller="fixed", beta=0.3)
    assert {r["beta"] for r in train_trust_region(GRID, fixed)[1]} == {0.3}


def test_ppo_clip_runs_k_epochs_and_records_the_exact_kl():
    cfg = TrustRegionConfig(method="ppo_clip", iterations=3, epochs=4, learning_rate=0.1)
    _, recs = train_trust_region(GRID, cfg)
    assert [r["passes"] for r in recs] == [4, 4, 4]
    assert all(0 <= r["kl"] <= r["kl_max"] for r in recs)


@pytest.mark.parametrize(
    "kw,field",
    [
        ({"method": "natural"}, "method"),
        ({"delta": 0.0}, "delta"),
        ({"backtrack_coef": 1.0}, "backtrack_coef"),
        ({"kl_controller": "pid"}, "kl_controller"),
        ({"epochs": 0}, "epochs"),
    ],
)
def test_config_refuses_bad_values_naming_the_field(kw, field):
    with pytest.raises(ValueError, match=field):
        TrustRegionConfig(**kw)
