"""Environment tokens get no gradient and no KL: loss_mask = completion_mask * env_mask, under
every loss type, importance-sampling level and KL estimator."""

import itertools

import pytest
import torch

from labkit.core import policy_loss
from labkit.core.options import IS_LEVELS, KL_ESTIMATORS, LOSS_TYPES

B, T = 4, 9


def _batch(seed=0):
    g = torch.Generator().manual_seed(seed)
    logp = -torch.rand(B, T, generator=g) * 2  # [B, T]
    old = logp + 0.3 * torch.randn(B, T, generator=g)  # [B, T] ratios away from 1: clipping
    ref = logp + 0.5 * torch.randn(B, T, generator=g)
    adv = torch.randn(B, generator=g)  # [B]
    completion = torch.ones(B, T)
    completion[1, 6:] = 0  # padding
    env = torch.ones(B, T)
    env[:, 3:5] = 0  # a tool's answer in the middle of every episode
    env[2, 7:] = 0
    return logp, old, ref, adv, completion, env


def _loss(logp, old, ref, adv, mask, loss_type, level, est):
    lp = logp.clone().requires_grad_()
    loss, stats = policy_loss(
        lp,
        old,
        adv,
        mask,
        loss_type=loss_type,
        epsilon=0.2,
        epsilon_high=5.0 if loss_type == "cispo" else 0.28,
        importance_sampling_level=level,
        max_completion_length=T,
        ref_logp=ref,
        beta=0.1,
        kl_estimator=est,
    )
    loss.backward()
    return loss.detach(), lp.grad, stats


CASES = list(itertools.product(LOSS_TYPES, IS_LEVELS, KL_ESTIMATORS))


@pytest.mark.parametrize("loss_type,level,est", CASES)
def test_flipping_environment_tokens_changes_nothing(loss_type, level, est):
    logp, old, ref, adv, completion, env = _batch()
    mask = completion * env  # [B, T]
    base, grad, stats = _loss(logp, old, ref, adv, mask, loss_type, level, est)
    is_env = (completion * (1 - env)).bool()  # [B, T]
    flipped = [torch.where(is_env, -5.0 - x, x) for x in (logp, old, ref)]
    loss, grad2, stats2 = _loss(*flipped, adv, mask, loss_type, level, est)
    torch.testing.assert_close(loss, base)
    torch.testing.assert_close(grad2, grad)
    assert grad[is_env].abs().max() == 0  # no gradient reaches an environment token
    assert stats["per_token"]["weight"][is_env].abs().max() == 0
    torch.testing.assert_close(stats2["kl"], stats["kl"])


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
def test_removing_the_mask_changes_the_loss(loss_type):
    logp, old, ref, adv, completion, env = _batch()
    masked, *_ = _loss(logp, old, ref, adv, completion * env, loss_type, "token", "k3")
    unmasked, *_ = _loss(logp, old, ref, adv, completion, loss_type, "token", "k3")
    assert (masked - unmasked).abs() > 1e-4
