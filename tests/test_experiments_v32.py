"""DeepSeek-V3.2's off-policy tricks (labkit.core.off_policy, labkit.experiments.v32_tricks): the
mask against a hand computation, the trainer applying it, the keep-sampling-mask doing what the
report describes, and the experiment's arms and claims. The runs themselves: the lab's live cell
in fast mode (tests/test_notebooks.py) and the stored result (tests/test_results_tables.py)."""

import math

import pandas as pd
import pytest
import torch

import labkit as lk
from labkit.algos.config import GRPOConfig, PPOConfig
from labkit.core import off_policy_sequence_mask, policy_loss
from labkit.experiments import v32_tricks
from labkit.models.prefix import completion_logits
from labkit.models.rollout import _filter_logits, completion_logprobs


def test_mask_against_a_hand_computation():
    # sequence 0: tokens p_old (0.5, 0.4, pad) -> p_theta (0.1, 0.4): divergence
    # (log 5 + 0) / 2 = 0.805; sequence 1: (0.5,) -> (0.4,): log 1.25 = 0.223
    old = torch.log(torch.tensor([[0.5, 0.4, 1.0], [0.5, 1.0, 1.0]]))
    new = torch.log(torch.tensor([[0.1, 0.4, float("nan")], [0.4, 1.0, 1.0]]))
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])
    assert math.log(5) / 2 == pytest.approx(0.8047, abs=1e-4)
    for adv, delta, want in [
        ([-1.0, -1.0], 0.5, [0, 1]),  # only seq 0 drifted past 0.5
        ([-1.0, -1.0], 0.2, [0, 0]),  # both past 0.2
        ([1.0, -1.0], 0.2, [1, 0]),  # a positive advantage is never masked
        ([-1.0, -1.0], 0.9, [1, 1]),  # nobody past 0.9
        ([0.0, -1.0], 0.0, [1, 0]),
    ]:  # A = 0 is not negative
        M = off_policy_sequence_mask(new, old, torch.tensor(adv), mask, delta)
        assert M.shape == (2, 1) and M.squeeze(-1).tolist() == want


def test_mask_per_token_advantages_and_bad_delta():
    old, new = torch.zeros(1, 2), torch.full((1, 2), -1.0)  # divergence 1
    M = off_policy_sequence_mask(new, old, torch.tensor([[-1.0, 1.0]]), torch.ones(1, 2), 0.5)
    assert M.tolist() == [[0.0, 1.0]]
    with pytest.raises(ValueError, match="delta=-0.1"):
        off_policy_sequence_mask(new, old, torch.tensor([-1.0]), torch.ones(1, 2), -0.1)


def test_config_field_is_validated():
    assert GRPOConfig().off_policy_mask is None
    with pytest.raises(ValueError, match="off_policy_mask=-1"):
        GRPOConfig(off_policy_mask=-1)
    with pytest.raises(ValueError, match="PPOTrainer does not apply it"):
        PPOConfig(off_policy_mask=0.1)


def _prepared(tiny, **kw):
    model, tok = tiny
    tr = lk.GRPOTrainer(
        model,
        tokenizer=tok,
        seed=0,
        max_steps=1,
        num_iterations=2,
        prompts_per_step=8,
        num_generations=4,
        loss_type="grpo",
        **kw,
    )
    return tr, tr.prepare(tr.collect())


def test_trainer_masks_drifted_negative_sequences(tiny):
    tr, r = _prepared(tiny, off_policy_mask=0.5)
    neg = r.advantages < 0  # [B]
    # the first token of each negative sequence drifts down by 3 nats (its ratio e^-3 is
    # clipped by PPO anyway); the others keep ratio 1, so PPO-clip still pushes on them.
    # Divergence 3 / |o_i| >= 3 / T > 0.5 (T <= 4 here): the whole sequence is masked.
    assert r.completion_ids.shape[1] <= 4
    drift = torch.zeros_like(r.old_logp)
    drift[neg, 0] = 3.0
    logp = (r.old_logp - drift).requires_grad_()
    loss, stats = tr.loss(logp, r)
    (g,) = torch.autograd.grad(loss, logp)
    assert float(stats["mask/off_policy_frac"]) == pytest.approx(float(neg.float().mean()))
    assert (g[neg] == 0).all() and (g[~neg & (r.advantages > 0)].abs().sum(-1) > 0).all()
    # the same batch without the mask: the drifted negative sequences do get a gradient
    tr.config.off_policy_mask = None
    loss, stats = tr.loss(logp, r)
    assert "mask/off_policy_frac" not in stats
    assert torch.autograd.grad(loss, logp)[0][neg].abs().sum() > 0
    # and policy_loss with those advantages zeroed is the masked loss (M multiplies A)
    ref, _ = policy_loss(logp, r.old_logp, r.advantages * ~neg, r.loss_mask, loss_type="grpo")
    tr.config.off_policy_mask = 0.5
    assert torch.allclose(tr.loss(logp, r)[0], ref)


def test_keep_sampling_mask_trains_on_the_sampling_distribution(tiny):
    # DeepSeek-V3.2's keep-sampling-mask: pi_old's top-p truncation applied to pi_theta. With
    # truncated_logprobs, the training log-prob of every sampled token is log of the truncated,
    # renormalised sampling probability; without it, the untruncated (smaller) log-prob.
    tr, r = _prepared(tiny, top_p=0.9, truncated_logprobs=True)
    m = r.completion_mask.bool()  # [B, T]
    assert r.sampling_mask.gather(-1, r.completion_ids[..., None])[m].all()  # sampled: kept
    with torch.no_grad():
        logits = completion_logits(
            tr.model, r.prompt_ids, r.prompt_mask, r.completion_ids, r.completion_mask
        )  # [B, T, V]
        mu = _filter_logits(logits, 0, 0.9).log_softmax(-1)  # [B, T, V] the sampler's
        want = mu.gather(-1, r.completion_ids[..., None]).squeeze(-1)  # [B, T]
        assert torch.allclose(r.old_logp[m], want[m], atol=1e-5)
        assert torch.allclose(completion_logprobs(tr.model, r)[m], want[m], atol=1e-5)
        r.sampling_mask = None
        untruncated = completion_logprobs(tr.model, r)
    assert (untruncated[m] <= want[m] + 1e-6).all() and (untruncated[m] < want[m] - 1e-3).any()


def test_arms_are_valid_configs_and_claims_name_real_columns():
    for settings in v32_tricks.ARMS.values():
        GRPOConfig(**(v32_tricks.STRESS | {"loss_type": "grpo"} | settings))
    m = pd.DataFrame(
        {"reward/mean": [0.2, 0.3], "accuracy": 0.5, "ratio/max": 2.0, "ratio/min": 0.5}
    ).assign(**{"kl/old": 0.1, "clip/region": 0.1, "entropy": 0.3})
    columns = set(v32_tricks.stability(m)) | set(v32_tricks.extra(m))
    for c in v32_tricks.EXPERIMENT.claims:
        assert c.arm in v32_tricks.ARMS and c.baseline in v32_tricks.ARMS, c.key
        assert c.metric in columns, c.key
    assert set(v32_tricks.EXPERIMENT.live["arms"]) <= set(v32_tricks.ARMS)
    assert v32_tricks.extra(m)["masked frac"] == 0.0  # no mask, nothing masked
