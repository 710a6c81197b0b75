"""Shared-prompt forward passes (labkit.models.prefix) give the numbers of one plain forward per row.

Checked in float64 so that rounding cannot hide a wrong mask or position: prompts of different
lengths (left padding), groups of repeated prompts, a LoRA model with its adapter on and off,
and greedy sampling against each prompt decoded alone. Each forward test runs twice: with the
packed rows (``[prompt | o_1 .. o_G]``) and with the gathered KV cache (``PACK_MAX = 0``).
"""

import random

import pytest
import torch

import labkit as lk
from labkit.models import prefix
from labkit.models.prefix import completion_logits, completion_outputs, distinct_prompts
from labkit.models.rollout import rollout, sample


@pytest.fixture(params=["packed", "kv-cache"])
def path(request, monkeypatch):
    """Which shared-prompt forward runs: packed rows, or the KV cache (packing turned off);
    afterwards, checks that the packed path did answer when it was the one under test."""
    if request.param == "kv-cache":
        monkeypatch.setattr(prefix, "PACK_MAX", 0)
    answered = []
    packed = prefix.packed_outputs

    def spy(*args, **kwargs):
        out = packed(*args, **kwargs)
        answered.append(out is not None)
        return out

    monkeypatch.setattr(prefix, "packed_outputs", spy)
    yield request.param
    assert any(answered) == (request.param == "packed"), answered


def plain_logits(model, b):
    """The reference: one forward over prompt + completion of every row."""
    ids = torch.cat([b.prompt_ids, b.completion_ids], 1)  # [B, P+T]
    attn = torch.cat([b.prompt_mask, b.completion_mask], 1)
    pos = (attn.cumsum(-1) - 1).clamp(min=0)
    return model(input_ids=ids, attention_mask=attn, position_ids=pos).logits[
        :, b.prompt_ids.shape[1] - 1 : -1
    ]  # [B, T, V]


def shared(model, b):
    return completion_logits(
        model, b.prompt_ids, b.prompt_mask, b.completion_ids, b.completion_mask
    )


def grouped_batch(model, tok, G=4, n=6, T=5, seed=0):
    """n prompts of 2 to 4 digits' length each (so left padding differs), G samples each."""
    task = lk.get_task("addition")
    prompts = [e.prompt for e in task.sample_prompts(n, random.Random(seed))]
    prompts += ["1+2=", "100+900="]  # shortest and longest prompts
    assert len({len(p) for p in prompts}) > 1
    return rollout(
        model,
        tok,
        [p for p in prompts for _ in range(G)],
        T,
        temperature=1.0,  # the generator on the model's device: CUDA's multinomial needs it there
        generator=torch.Generator(next(model.parameters()).device).manual_seed(seed),
    )


@pytest.fixture(scope="module")
def policy64():
    model, tok = lk.load_policy("tiny")  # once for the module: the tests only read it
    return model.double(), tok


def masked(x, b):
    return x * b.completion_mask.unsqueeze(-1)


def test_distinct_prompts_finds_the_groups_and_none_when_all_differ():
    ids = torch.tensor([[0, 5], [7, 8], [0, 5], [7, 8]])
    mask = (ids > 0).long()
    u, m, index = distinct_prompts(ids, mask)
    assert torch.equal(u[index], ids) and torch.equal(m[index], mask) and u.shape[0] == 2
    assert distinct_prompts(ids[:2], mask[:2]) is None


def test_logits_and_gradients_equal_a_plain_forward(policy64, path):
    model, tok = policy64
    b = grouped_batch(model, tok)
    assert distinct_prompts(b.prompt_ids, b.prompt_mask)[0].shape[0] == 8  # 32 rows, 8 prompts
    model.train()
    grads = []
    for f in (plain_logits, shared):
        model.zero_grad()
        logits = f(model, b)
        lp = lk.token_logprobs(logits, b.completion_ids).double()  # [B, T]
        (lp * b.completion_mask).sum().backward()
        grads.append((masked(logits.detach(), b), [p.grad.clone() for p in model.parameters()]))
    (a, ga), (s, gs) = grads
    assert torch.allclose(a, s, atol=1e-10)
    for x, y in zip(ga, gs):  # float32 log-softmax inside token_logprobs bounds the agreement
        assert (x - y).norm() <= 1e-5 * x.norm() + 1e-9


def test_one_token_completions_and_lora_adapter_on_and_off(tiny, path):
    model, tok = tiny
    lora = lk.models.add_lora(model.double(), r=4, alpha=8)
    torch.nn.init.normal_(
        lora.base_model.model.model.layers[0].self_attn.q_proj.lora_B.default.weight, std=0.1
    )  # a non-zero adapter, so on and off differ
    b = grouped_batch(lora, tok, T=1)
    assert b.completion_ids.shape[1] == 1
    with torch.no_grad():
        on = shared(lora, b)
        with lora.disable_adapter():
            off = shared(lora, b)
            assert torch.allclose(off, plain_logits(lora, b), atol=1e-10)
        assert torch.allclose(on, plain_logits(lora, b), atol=1e-10)
    assert (on - off).abs().max() > 1e-3


def test_greedy_sampling_of_a_grouped_batch_equals_each_prompt_alone(tiny):
    model, tok = tiny
    prompts = ["7+5=", "123+456=", "7+5=", "40+2=", "123+456="]
    b = rollout(model, tok, prompts, 6, temperature=0.0)
    for i, p in enumerate(prompts):
        enc = tok([p], return_tensors="pt", add_special_tokens=False)
        ids, mask, _ = sample(
            model,
            enc["input_ids"],
            enc["attention_mask"],
            6,
            eos_id=tok.eos_token_id,
            pad_id=tok.pad_token_id,
            temperature=0.0,
        )
        n = int(mask.sum())
        assert b.completion_ids[i, :n].tolist() == ids[0, :n].tolist(), p


def test_hidden_states_for_a_value_head_equal_a_plain_forward(policy64, path):
    """PPO's value head reads the last hidden state before each completion token."""
    model, tok = policy64
    b = grouped_batch(model, tok, G=3)
    ids = torch.cat([b.prompt_ids, b.completion_ids], 1)
    attn = torch.cat([b.prompt_mask, b.completion_mask], 1)
    with torch.no_grad():
        out = model(
            input_ids=ids,
            attention_mask=attn,
            position_ids=(attn.cumsum(-1) - 1).clamp(min=0),
            output_hidden_states=True,
        )
        P = b.prompt_ids.shape[1]
        logits, h = completion_outputs(
            model, b.prompt_ids, b.prompt_mask, b.completion_ids, b.completion_mask, hidden=True
        )
    keep = b.completion_mask.unsqueeze(-1)
    assert torch.allclose(h * keep, out.hidden_states[-1][:, P - 1 : -1] * keep, atol=1e-10)
    assert torch.allclose(logits * keep, out.logits[:, P - 1 : -1] * keep, atol=1e-10)


def test_a_batch_of_distinct_prompts_takes_one_plain_forward(policy64):
    model, tok = policy64
    b = grouped_batch(model, tok, G=1)  # every prompt once: nothing to share
    assert distinct_prompts(b.prompt_ids, b.prompt_mask) is None
    with torch.no_grad():
        assert torch.allclose(
            masked(shared(model, b), b), masked(plain_logits(model, b), b), atol=1e-10
        )


def test_groups_of_unequal_size_fall_back_to_the_kv_cache(policy64):
    """Packing needs G rows per prompt: 3 + 1 rows take the cached path, same numbers."""
    model, tok = policy64
    b = rollout(
        model,
        tok,
        ["7+5=", "7+5=", "7+5=", "40+2="],
        4,
        temperature=1.0,
        generator=torch.Generator().manual_seed(0),
    )
    shared_ = distinct_prompts(b.prompt_ids, b.prompt_mask)
    assert prefix.packed_outputs(model, shared_, b.completion_ids, b.completion_mask) is None
    with torch.no_grad():
        assert torch.allclose(
            masked(shared(model, b), b), masked(plain_logits(model, b), b), atol=1e-10
        )


def test_packed_mask_lets_a_completion_see_its_prompt_and_itself_only():
    """Prompt of 2 tokens (the first is padding), G = 2 completions of 2 tokens."""
    sees = prefix.packed_mask(torch.tensor([[0, 1]]), torch.ones(1, 2, 2))[0, 0].int()
    assert sees.tolist() == [
        [1, 0, 0, 0, 0, 0],  # a padded query sees only itself
        [0, 1, 0, 0, 0, 0],  # the prompt token: not the padding
        [0, 1, 1, 0, 0, 0],  # o_1[0]: prompt, itself
        [0, 1, 1, 1, 0, 0],  # o_1[1]
        [0, 1, 0, 0, 1, 0],  # o_2[0]: prompt, itself, not o_1
        [0, 1, 0, 0, 1, 1],
    ]
