"""Online DPO (labkit.algos.online_dpo): the verifier's pairs on a hand-made batch, the config's
checks, and a short run: at the first step pi = pi_ref, so the loss is ln 2 and the KL 0 (the
closed form), every step draws 2 x prompts_per_step samples, and one step raises the margin of
the pairs it trained on."""

import dataclasses
import math
import pathlib
import re

import pytest
import torch

from labkit.algos import base, online_dpo, sampling, scoring
from labkit.algos.config import GRPOConfig, OnlineDPOConfig
from labkit.algos.dpo import batch_sequence_logprobs
from labkit.algos.online_dpo import OnlineDPOTrainer, sequence_logp, verifier_pairs
from labkit.models.rollout import completion_logprobs


def test_verifier_pairs_by_hand():
    # prompts: (right, wrong) -> (0, 1); (wrong, wrong) none; (right, right) none; (wrong, right)
    correct = torch.tensor([True, False, False, False, True, True, False, True])
    chosen, rejected = verifier_pairs(correct)
    assert chosen.tolist() == [0, 7] and rejected.tolist() == [1, 6]
    assert correct[chosen].all() and not correct[rejected].any()
    none = verifier_pairs(torch.tensor([True, True, False, False]))
    assert none[0].numel() == none[1].numel() == 0


def test_sequence_logp_sums_the_completion_tokens():
    logp = torch.tensor([[-1.0, -2.0, -5.0], [-0.5, -0.5, -0.5]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    assert sequence_logp(logp, mask).tolist() == [-3.0, -1.5]


def test_online_and_offline_dpo_score_a_batch_alike(tiny):
    """Online DPO's log pi of a pair is offline DPO's (one masked sum): on a rollout's rows, at
    the sampling temperature, it is the token log-probs summed over the completion by hand."""
    model, tok = tiny
    t = OnlineDPOTrainer(model, tokenizer=tok, prompts_per_step=4, temperature=0.7, seed=0)
    b = t.collect()
    t.model.eval()  # the same forward twice (no dropout)
    with torch.no_grad():
        got = batch_sequence_logprobs(t.model, b, temperature=0.7)  # [B]
        logp = completion_logprobs(t.model, b, 0.7)  # [B, T]
    mask = b.completion_mask.bool()  # [B, T]
    by_hand = [logp[i][mask[i]].sum() for i in range(len(b))]
    assert torch.allclose(got, torch.stack(by_hand), atol=1e-6)
    mean = batch_sequence_logprobs(t.model, b, average=True, temperature=0.7)
    assert torch.allclose(mean * mask.sum(-1), got, atol=1e-5)


@pytest.mark.parametrize(
    "bad",
    [{"num_generations": 4}, {"beta": 0.0}, {"num_iterations": 2}, {"dynamic_sampling": True}],
)
def test_config_refuses_what_online_dpo_is_not(bad):
    with pytest.raises(ValueError, match=next(iter(bad))):
        OnlineDPOConfig(**bad)


@pytest.mark.parametrize(
    "unused",
    [{"epsilon": 0.3}, {"loss_type": "grpo"}, {"entropy_coef": 0.01}, {"kl_estimator": "k1"}],
)
def test_config_refuses_grpo_fields_it_never_reads(unused):
    with pytest.raises(ValueError, match=f"{next(iter(unused))}=.*never reads"):
        OnlineDPOConfig(**unused)


def test_the_unused_fields_are_grpo_fields_the_online_trainer_never_reads():
    """Each of ``UNUSED`` is a GRPOConfig field that no module online DPO runs reads."""
    grpo = {f.name for f in dataclasses.fields(GRPOConfig)}
    modules = (base, sampling, scoring, online_dpo)
    source = "\n".join(pathlib.Path(m.__file__).read_text() for m in modules)
    for name in OnlineDPOConfig.UNUSED:
        assert name in grpo and not re.search(rf"\.{name}\b", source), name
    assert OnlineDPOConfig().epsilon == GRPOConfig().epsilon  # the defaults pass


def test_a_short_run_starts_at_ln2_and_counts_its_samples(tiny):
    model, tok = tiny
    t = OnlineDPOTrainer(model, tokenizer=tok, prompts_per_step=16, max_steps=2, seed=0)
    first = t.step()
    assert first["loss"] == pytest.approx(math.log(2), abs=1e-5)  # h = 0 when pi = pi_ref
    assert first["rewards/chosen"] == pytest.approx(0.0, abs=1e-5)
    assert first["kl/k3"] == pytest.approx(0.0, abs=1e-5)  # the sampler is pi_ref
    assert 0 < first["pairs/frac"] <= 1 and first["samples/drawn"] == 32
    assert t.step()["samples/drawn"] == 64
    assert len(t.log.samples) == 64


def test_one_step_raises_the_margin_of_its_pairs(tiny):
    model, tok = tiny
    t = OnlineDPOTrainer(model, tokenizer=tok, prompts_per_step=16, learning_rate=1e-3, seed=1)
    r = t.collect()
    t.verify(r)
    t.reference_logprobs(r)
    chosen, rejected = verifier_pairs(r.correct)
    assert len(chosen)
    rows = torch.cat([chosen, rejected])

    def margin():
        with torch.no_grad():
            b = r.select(rows)
            lp = batch_sequence_logprobs(t.model, b)
            w, lo = lp.chunk(2)
            return (w - lo).mean().item()

    before = margin()
    t.dpo_update(r, rows)
    assert margin() > before
