"""LoRA policies (pi_ref is the same model with the adapter off, only the adapter trains);
training log-probs under the sampling truncation."""

import dataclasses

import torch

import labkit as lk
from labkit.models.rollout import completion_logprobs


def test_lora_reference_is_the_disabled_adapter_and_only_the_adapter_trains(lora):
    lora, tok = lora
    base = {k: v.clone() for k, v in lora.get_base_model().state_dict().items() if "lora_" not in k}
    tr = lk.GRPOTrainer(
        lora,
        tokenizer=tok,
        beta=0.04,
        num_generations=4,
        prompts_per_step=4,
        learning_rate=1e-2,
        max_steps=2,
    )
    assert tr.ref_model is None and tr.adapter_ref  # no second copy of the model
    n_opt = sum(p.numel() for g in tr.optimizer.param_groups for p in g["params"])
    assert n_opt == sum(p.numel() for p in lora.parameters() if p.requires_grad) < 20_000
    tr.train(progress=False)
    m = tr.log.metrics
    assert abs(m["kl/k3"].iloc[0]) < 1e-6  # the adapter starts at 0: pi = pi_ref
    assert m["kl/k3"].iloc[-1] > 0  # the adapter moved the policy away from pi_ref
    # the base weights did not move, and the disabled-adapter log-probs are the base model's
    after = lora.get_base_model().state_dict()
    for k, v in base.items():
        assert torch.equal(after[k], v), k
    batch = tr.generate()
    with lora.disable_adapter():
        ref = completion_logprobs(lora, batch)
    plain, _ = lk.load_policy("tiny")  # not the fixture: lora wraps that one
    assert torch.allclose(ref, completion_logprobs(plain, batch), atol=1e-5)


def test_training_logprobs_can_use_the_sampling_truncation():
    """top_k = 3 with truncated_logprobs: log pi renormalised over the 3 tokens sampling allowed."""
    tr = lk.GRPOTrainer(
        num_generations=4,
        prompts_per_step=4,
        top_k=3,
        truncated_logprobs=True,
        dynamic_sampling=True,
        max_steps=2,
    )
    batch = tr.generate()
    keep = batch.sampling_mask  # [B, T, V]
    assert keep.shape[:2] == batch.completion_ids.shape and (keep.sum(-1) == 3).all()
    truncated = completion_logprobs(tr.model, batch)
    full = completion_logprobs(
        tr.model, dataclasses.replace(batch, sampling_mask=None)
    )  # no truncation
    m = batch.completion_mask.bool()
    assert (truncated[m] >= full[m] - 1e-6).all() and (truncated[m] > full[m] + 1e-4).any()
    m1 = tr.step()  # with dynamic sampling, concatenated batches keep their masks
    assert abs(m1["ratio/mean"] - 1.0) < 1e-6
