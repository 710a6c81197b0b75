"""Policy gradients: exact gradient, unbiased estimators, the baseline's variance cut, training."""

import numpy as np
import pytest
import torch

from labkit.classic import (
    PGConfig,
    advantages,
    exact_gradient,
    exact_objective,
    exact_values,
    gae_lambda_sweep,
    gradient_variance,
    gridworld,
    per_episode_gradients,
    pg_loss,
    policy_evaluation,
    rollout,
    train_pg,
    value_iteration,
)
from labkit.core.advantages import discounted_returns

GRID = gridworld(step_reward=-0.05)  # each step costs 0.05: returns share a large offset
T = 30
KINDS = {
    "REINFORCE": ("reward_to_go", 1.0, None),
    "baseline": ("baseline", 1.0, "exact"),
    "TD (GAE 0)": ("gae", 0.0, "exact"),
}


@pytest.fixture(scope="module")
def measured():
    return gradient_variance(GRID, torch.zeros(25, 4), KINDS, n_episodes=4000, T=T)


def test_baseline_lowers_reinforce_gradient_variance(measured):
    # measured: per-episode trace variance 20.5 without, 2.2 with V_t(s) as baseline
    assert measured["baseline"]["var"] < 0.25 * measured["REINFORCE"]["var"]
    assert measured["TD (GAE 0)"]["var"] < measured["baseline"]["var"]


def test_estimators_are_unbiased_with_the_exact_critic(measured):
    # E||mean - grad J||^2 = var / N for an unbiased estimator: bias2 / se2 is ~1, not >> 1
    for name, st in measured.items():
        assert st["bias2"] < 3 * st["se2"], name
    # with the baseline, 4000 episodes pin the direction down; REINFORCE's mean is still ~50% off
    for name in ("baseline", "TD (GAE 0)"):
        assert measured[name]["bias2"] < 0.1 * measured[name]["norm2"], name


def test_gae_with_a_wrong_critic_is_biased_unless_lambda_is_1():
    V_bad = torch.zeros(25)  # a critic that knows nothing
    out = gae_lambda_sweep(GRID, torch.zeros(25, 4), V_bad, [0.0, 0.5, 1.0], 4000, T=T)
    assert out[0.0]["bias2"] > 20 * out[0.0]["se2"]  # lam = 0 trusts V: biased
    assert out[1.0]["bias2"] < 3 * out[1.0]["se2"]  # lam = 1 is the MC return: unbiased
    assert out[0.0]["var"] < out[0.5]["var"] < out[1.0]["var"]


def test_exact_gradient_matches_finite_differences():
    theta = torch.randn(25, 4, generator=torch.Generator().manual_seed(0)) * 0.5
    g = exact_gradient(GRID, theta, 1.0, T)
    for s, a in [(0, 1), (2, 2), (12, 3)]:
        e = torch.zeros(25, 4)
        e[s, a] = 1e-4
        fd = exact_objective(GRID, theta + e, 1.0, T) - exact_objective(GRID, theta - e, 1.0, T)
        assert g[s, a].item() == pytest.approx(fd.item() / 2e-4, abs=1e-4)


def test_exact_values_match_the_linear_solve_for_long_horizons():
    V = exact_values(GRID, torch.zeros(25, 4), 0.9, T=400)[0].double().numpy()
    np.testing.assert_allclose(V, policy_evaluation(GRID, np.full((25, 4), 0.25), 0.9), atol=1e-5)


def test_per_episode_gradient_equals_autograd_of_the_loss():
    theta = torch.zeros(25, 4, requires_grad=True)
    batch = rollout(GRID, theta, 8, T, torch.Generator().manual_seed(1))
    adv, _ = advantages(batch, "reward_to_go", 1.0)
    loss, _ = pg_loss(theta, batch, adv)
    loss.backward()
    per_ep = per_episode_gradients(theta, batch, adv)  # [8, S, A]
    torch.testing.assert_close(per_ep.mean(0), -theta.grad)


def test_reward_to_go_comes_from_labkit_core():
    batch = rollout(GRID, torch.zeros(25, 4), 4, T, torch.Generator().manual_seed(2))
    adv, _ = advantages(batch, "reward_to_go", 0.9)
    torch.testing.assert_close(adv, discounted_returns(batch.rewards, batch.mask, 0.9))


@pytest.mark.parametrize("kind", ["reward_to_go", "baseline", "gae"])
def test_training_finds_the_short_path(kind):
    theta, _, stats = train_pg(GRID, PGConfig(advantage=kind, iterations=150))
    V_star, _, _, _ = value_iteration(GRID, 1.0)  # -0.05 x 7 + 1 = 0.65
    assert np.mean(stats["return"][-10:]) > V_star[0] - 0.1
    assert exact_objective(GRID, theta, 1.0, T).item() > V_star[0] - 0.1


def test_config_rejects_bad_values():
    with pytest.raises(ValueError, match="advantage must be one of"):
        PGConfig(advantage="grpo")
    with pytest.raises(ValueError, match="lam"):
        PGConfig(lam=2.0)
