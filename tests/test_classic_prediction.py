"""MC vs TD on the same episodes, against the exact V of the random walk."""

import numpy as np
import pytest

from labkit.classic import (
    bias_variance,
    estimators,
    mc_prediction,
    nstep_td_prediction,
    policy_evaluation,
    random_walk,
    sample_episode,
    td0_prediction,
    td_lambda_prediction,
)

MDP = random_walk()
PI = np.full((7, 2), 0.5)
V_TRUE = policy_evaluation(MDP, PI, 1.0)  # 1/6 ... 5/6


@pytest.fixture(scope="module")
def sample_average():
    """Sample-average step size (alpha = 1/N(s)): 400 runs x 10 episodes, same episodes for all."""
    return bias_variance(MDP, PI, V_TRUE, estimators(7, 1.0, alpha=None), runs=400, episodes=10)


def test_mc_is_unbiased(sample_average):
    mc = sample_average["MC"]
    k = 10
    se = np.sqrt(mc["var_s"][k] / mc["n"][k])  # standard error of the mean over runs
    live = ~np.isnan(se)
    assert np.all(np.abs(mc["bias_s"][k][live]) < 4 * se[live])


def test_td0_is_biased_with_lower_variance(sample_average):
    mc, td = sample_average["MC"], sample_average["TD(0)"]
    for k in (1, 5, 10):
        assert td["var"][k] < 0.75 * mc["var"][k]
        assert td["bias2"][k] > 20 * mc["bias2"][k] + 1e-3
    se_td = np.sqrt(td["var_s"][10] / td["n"][10])
    assert np.nanmax(np.abs(td["bias_s"][10]) / se_td) > 10  # far outside noise


def test_constant_alpha_reproduces_sutton_example_6_2():
    # alpha = 0.1, V0 = 0.5, after 100 episodes: TD's RMS error (~0.06) is below MC's (~0.1).
    out = bias_variance(
        MDP, PI, V_TRUE, estimators(7, 1.0, alpha=0.1, V0=0.5), runs=60, episodes=100, seed=1
    )
    rms = {k: np.sqrt(v["mse"][-1]) for k, v in out.items()}
    assert rms["TD(0)"] < rms["MC"]
    assert 0.03 < rms["TD(0)"] < 0.09 and 0.07 < rms["MC"] < 0.14


def _episodes(n=30, seed=0):
    rng = np.random.default_rng(seed)
    return [sample_episode(MDP, PI, rng) for _ in range(n)]


def test_special_cases_coincide():
    eps = _episodes()
    td0 = td0_prediction(eps, 7, 1.0, alpha=0.1)
    np.testing.assert_allclose(nstep_td_prediction(eps, 7, 1.0, n=1, alpha=0.1), td0)
    np.testing.assert_allclose(td_lambda_prediction(eps, 7, 1.0, lam=0.0, alpha=0.1), td0)
    every_visit = mc_prediction(eps, 7, 1.0, first_visit=False)
    np.testing.assert_allclose(nstep_td_prediction(eps, 7, 1.0, n=10_000), every_visit)


def test_mc_sample_average_is_the_mean_of_first_visit_returns():
    eps = _episodes(5)
    V = mc_prediction(eps, 7, gamma=1.0)[-1]
    # every return is the final reward (gamma = 1, reward only at the right end)
    finals = [ep.rewards.sum() for ep in eps if 2 in ep.states[:-1]]
    assert V[2] == pytest.approx(np.mean(finals))


def test_estimators_converge_with_many_episodes():
    eps = _episodes(2000, seed=3)
    for H in (
        mc_prediction(eps, 7, 1.0),
        td0_prediction(eps, 7, 1.0, alpha=0.01),
        td_lambda_prediction(eps, 7, 1.0, lam=0.8, alpha=0.01),
    ):
        assert np.abs(H[-1] - V_TRUE).max() < 0.06


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="lam"):
        td_lambda_prediction([], 7, 1.0, lam=1.5)
    with pytest.raises(ValueError, match="n must"):
        nstep_td_prediction([], 7, 1.0, n=0)
