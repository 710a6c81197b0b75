"""TRPOTrainer on the tiny policy: TRPO's update stays within delta, PPO's adaptive beta follows
its rule, and method="clip" with mu = 1 is GRPOTrainer's plain policy-gradient step."""

import pytest
import torch

import labkit as lk
from labkit.algos.config import TRPOConfig
from labkit.core.kl_control import adaptive_kl_beta

TINY = {"num_generations": 4, "prompts_per_step": 4, "max_steps": 3, "learning_rate": 5e-4}


def test_trpo_update_stays_within_delta_and_moves_when_accepted():
    tr = lk.TRPOTrainer(**TINY, method="trpo", delta=0.005, cg_iters=4)
    before = torch.nn.utils.parameters_to_vector(tr.model.parameters()).clone()
    m = tr.step()
    after = torch.nn.utils.parameters_to_vector(tr.model.parameters())
    assert m["kl/update"] == m["trpo/kl"] <= 0.005
    assert m["cg/iters"] <= 4 and m["trpo/expected_improve"] > 0
    moved = bool((after != before).any())
    assert moved == (m["trpo/accepted"] == 1.0)
    if moved:  # the step is f times the full natural step, whose quadratic KL is delta
        assert m["trpo/quadratic_kl"] == pytest.approx(0.005, rel=1e-4)
        assert m["trpo/improve"] > 0


def test_kl_penalty_beta_follows_ppo_adaptive_rule():
    tr = lk.TRPOTrainer(**TINY, method="kl_penalty", num_iterations=2, d_targ=0.01)
    beta = tr.beta_old
    for _ in range(2):
        m = tr.step()
        assert m["beta_old"] == beta  # the step used the beta the last d set
        beta = adaptive_kl_beta(beta, m["kl/update"], 0.01)
        assert tr.beta_old == beta
    fixed = lk.TRPOTrainer(**TINY, method="kl_penalty", kl_controller="fixed", beta_old=0.5)
    fixed.train(max_steps=2, progress=False)
    assert set(fixed.log.metrics["beta_old"]) == {0.5}


def test_clip_with_one_iteration_is_grpo_plain_policy_gradient():
    """pi_old from its own forward (TRPOTrainer) or the first update's (GRPOTrainer): ratio 1
    either way, the same gradient and the same step up to float rounding."""
    a = lk.TRPOTrainer(**TINY, method="clip", num_iterations=1)
    b = lk.GRPOTrainer(**TINY, num_iterations=1)
    ma, mb = a.step(), b.step()
    assert ma["reward/mean"] == mb["reward/mean"]
    assert ma["kl/update"] > 0
    for p, q in zip(a.model.parameters(), b.model.parameters()):
        torch.testing.assert_close(p, q, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"method": "natural"}, "method='natural'"),
        ({"delta": 0.0}, "delta=0.0"),
        ({"backtrack_coef": 1.5}, "backtrack_coef=1.5"),
        ({"kl_controller": "pid"}, "kl_controller='pid'"),
        ({"method": "trpo", "num_iterations": 2}, "num_iterations=2 with method='trpo'"),
        ({"tis_cap": 2.0}, "TRPOTrainer does not apply them"),
        ({"method": "trpo", "entropy_coef": 0.1}, "entropy_coef=0.1"),
    ],
)
def test_bad_options_are_refused(kw, message):
    with pytest.raises(ValueError, match=message):
        TRPOConfig(**kw)
