"""The Gaussian policy against torch.distributions.Normal and the closed forms; the score-function
gradient against the exact gradient of a quadratic reward; the point-mass task's Riccati
optimum; the three advantages on a hand-computed episode; REINFORCE with a baseline improves
the return on a fixed seed."""

import math

import pytest
import torch

from labkit.classic.continuous import (
    GaussianPGConfig,
    advantage,
    mean_policy_return,
    optimal_return,
    riccati,
    train_gaussian_pg,
)
from labkit.classic.gaussian import (
    GaussianPolicy,
    gaussian_entropy,
    gaussian_log_prob,
    score_function_gradient,
)

G = torch.Generator().manual_seed(0)


def test_log_prob_and_entropy_match_torch_normal_and_the_closed_forms():
    mu, log_std = torch.randn(5, 3, generator=G), torch.randn(3, generator=G)
    a = mu + torch.randn(5, 3, generator=G) * log_std.exp()
    normal = torch.distributions.Normal(mu, log_std.exp())
    torch.testing.assert_close(gaussian_log_prob(a, mu, log_std), normal.log_prob(a).sum(-1))
    torch.testing.assert_close(gaussian_entropy(log_std), normal.entropy()[0].sum())
    sigma = log_std.exp()  # closed forms: H = sum 1/2 log(2 pi e sigma^2), log pi(mu) = -H - D/2
    H = (0.5 * torch.log(2 * math.pi * math.e * sigma**2)).sum()
    torch.testing.assert_close(gaussian_entropy(log_std), H)
    torch.testing.assert_close(gaussian_log_prob(mu[:1], mu[:1], log_std)[0], -H + 1.5)


def test_score_of_the_gaussian_is_the_textbook_formula():
    mu, log_std = torch.tensor([0.3, -1.0], requires_grad=True), torch.tensor([0.2, -0.5])
    log_std.requires_grad_()
    a = torch.tensor([[1.0, -2.0]])
    g_mu, g_ls = torch.autograd.grad(gaussian_log_prob(a, mu[None], log_std)[0], (mu, log_std))
    z = (a[0] - mu.detach()) / log_std.detach().exp()
    torch.testing.assert_close(g_mu, z / log_std.detach().exp())  # (a - mu) / sigma^2
    torch.testing.assert_close(g_ls, z**2 - 1)  # ((a - mu) / sigma)^2 - 1


def test_score_function_gradient_matches_the_analytic_gradient_of_a_quadratic_reward():
    # J(mu, log sigma) = E[-|a - c|^2] = -|mu - c|^2 - sum sigma^2: dJ/dmu = -2 (mu - c),
    # dJ/dlog sigma = -2 sigma^2. n = 400,000 samples: standard errors about 0.01.
    mu, log_std, c = torch.tensor([0.5, -1.0]), torch.tensor([0.0, -0.7]), torch.tensor([1.5, 0.0])
    reward = lambda a: -((a - c) ** 2).sum(-1)
    g_mu, g_ls = score_function_gradient(
        mu, log_std, reward, 400_000, generator=torch.Generator().manual_seed(1)
    )
    torch.testing.assert_close(g_mu, -2 * (mu - c), atol=0.06, rtol=0)
    torch.testing.assert_close(g_ls, -2 * (2 * log_std).exp(), atol=0.06, rtol=0)
    far = torch.tensor([2.0, 1.0])  # and the estimate is not blind: a wrong c is far off
    assert (g_mu - (-2 * (mu - far))).abs().max() > 1.0


def test_riccati_gains_are_optimal_and_the_mean_policy_scores_them():
    T, rho = 6, 0.1
    k, p = riccati(T, rho)
    assert p[-1] == 0 and (p[:-1] > 0).all()

    def linear(gains):  # a = -k_t x, a stand-in for a policy's mean
        def mean(s):
            t = (s[:, 1] * T).round().long()
            return (-gains[t].float() * s[:, 0])[:, None], torch.zeros(1)

        return mean

    x0 = torch.linspace(-1, 1, 101)
    best = mean_policy_return(linear(k), T, rho, x0)
    assert best == pytest.approx(optimal_return(T, rho, x0), abs=1e-6)
    for bump in (0.9, 1.1):  # any other gain does worse
        assert mean_policy_return(linear(k * bump), T, rho, x0) < best - 1e-5


def test_policy_samples_have_the_policy_mean_and_std():
    pi = GaussianPolicy(2, 1, hidden=8, log_std=-1.0)
    s = torch.zeros(20_000, 2)
    a = pi.sample(s, torch.Generator().manual_seed(0))
    mu = pi(s[:1])[0][0, 0].item()
    assert a.mean().item() == pytest.approx(mu, abs=0.01)
    assert a.std().item() == pytest.approx(math.exp(-1.0), rel=0.02)


def test_the_three_advantages_on_a_hand_computed_episode():
    r, V = torch.tensor([[1.0, 2.0]]), torch.tensor([[0.5, 0.5]])  # two steps, then the end
    cfg = lambda kind, lam=0.95: GaussianPGConfig(advantage=kind, gamma=1.0, lam=lam)
    A, target = advantage(cfg("reward_to_go"), r, V)  # G_t = [1 + 2, 2]
    torch.testing.assert_close(A, torch.tensor([[3.0, 2.0]]))
    A, target = advantage(cfg("baseline"), r, V)  # G_t - V(s_t), V regressed on G_t
    torch.testing.assert_close(A, torch.tensor([[2.5, 1.5]]))
    torch.testing.assert_close(target, torch.tensor([[3.0, 2.0]]))
    A, _ = advantage(cfg("gae", lam=0.0), r, V)  # the TD errors: [1 + 0.5 - 0.5, 2 - 0.5]
    torch.testing.assert_close(A, torch.tensor([[1.0, 1.5]]))
    A, _ = advantage(cfg("gae", lam=1.0), r, V)  # lambda = 1: the Monte Carlo G_t - V
    torch.testing.assert_close(A, torch.tensor([[2.5, 1.5]]))


def test_reinforce_with_a_baseline_improves_the_return():
    _, st = train_gaussian_pg(GaussianPGConfig(advantage="baseline", iterations=50, seed=0))
    first, last = st["eval_return"][0], sum(st["eval_return"][-5:]) / 5
    assert last > first + 2.0  # from about -5 (no control) toward J* = -0.03
    assert last <= st["optimal_return"]  # the optimum is never beaten
    assert len(st["critic_loss"]) == 50 and st["critic_loss"][-1] >= 0
