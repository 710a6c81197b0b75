"""The lean Llama decoding step (labkit.models.decode) computes what HF's forward computes.

Same prompts (left-padded, of different lengths), same sampled tokens fed to both decoders:
logits agree to float32 rounding on the tiny policy and on a random Llama with SmolLM2's
shape of choices (grouped-query attention, tied embeddings, another RoPE base); greedy
sampling writes the same completions; everything the lean step cannot copy (LoRA, autocast,
biases, another architecture) goes to HF's forward.
"""

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

import labkit as lk
from labkit.models import decode
from labkit.models.prefix import prompt_forward
from labkit.models.rollout import rollout


def encode(tok, prompts):
    enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    return enc["input_ids"], enc["attention_mask"]


def both_decoders(model, ids, mask, tokens: torch.Tensor):
    """Logits [1 + steps, B, V] of HF's and the lean decoder (the prompt's, then each step's)
    fed the same ``tokens`` [B, steps]."""
    out = []
    for lean in (False, True):
        with torch.no_grad():
            if lean:
                step = decode.LlamaDecoder(model, mask, tokens.shape[1])
                logits = [step.prefill(ids, mask)]
            else:
                past, first, _ = prompt_forward(model, ids, mask)
                step, logits = decode.HFDecoder(model, past, mask), [first]
            pos = mask.sum(-1)
            for t in range(tokens.shape[1]):
                logits.append(step(tokens[:, t], pos))
                pos = pos + 1
        out.append(torch.stack(logits))
    return out


PROMPTS = ["7+5=", "123+456=", "7+5=", "40+2=", "9+90="]


def test_lean_step_equals_hf_on_the_tiny_policy(tiny):
    model, tok = tiny
    assert decode.lean_ok(model)
    ids, mask = encode(tok, PROMPTS)
    assert (mask == 0).any()  # left padding is part of the test
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(4, len(tok), (len(PROMPTS), 6), generator=g)
    hf, lean = both_decoders(model, ids, mask, tokens)
    torch.testing.assert_close(lean, hf, rtol=1e-5, atol=1e-4)  # measured: 1.6e-5


def test_lean_step_equals_hf_with_grouped_query_attention_and_tied_embeddings():
    """SmolLM2's choices on a random model: 4 query heads share 2 key/value heads, the output
    head is the embedding, RoPE base 1e5, RMSNorm eps 1e-5."""
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=50,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        tie_word_embeddings=True,
        rope_theta=1e5,
        rms_norm_eps=1e-5,
        pad_token_id=0,
    )
    model = LlamaForCausalLM(cfg).eval()
    assert model.lm_head.weight is model.model.embed_tokens.weight and decode.lean_ok(model)
    ids = torch.randint(1, 50, (3, 5))
    mask = torch.ones_like(ids)
    mask[0, :2], ids[0, :2] = 0, 0
    hf, lean = both_decoders(model, ids, mask, torch.randint(1, 50, (3, 4)))
    torch.testing.assert_close(lean, hf, rtol=1e-5, atol=1e-4)  # float32 rounding


def test_lean_prefill_runs_each_distinct_prompt_once_and_fills_every_row(tiny):
    """The prompt pass alone, with PROMPTS' repeated row: the same logits whether the rows are
    run as given or once per distinct prompt, and equal to HF's prompt forward."""
    model, tok = tiny
    ids, mask = encode(tok, PROMPTS)
    with torch.no_grad():
        _, hf, _ = prompt_forward(model, ids, mask)
        shared = decode.LlamaDecoder(model, mask, 1)
        once = shared.prefill(ids, mask)
        every = decode.LlamaDecoder(model, mask, 1)
        rows = every.prefill(ids, mask, (ids, mask, torch.arange(len(PROMPTS))))
    assert torch.equal(once[0], once[2])  # "7+5=" twice
    torch.testing.assert_close(once, hf, rtol=1e-5, atol=1e-4)
    torch.testing.assert_close(rows, once, rtol=1e-6, atol=1e-6)
    for (k1, v1), (k2, v2) in zip(shared.cache, every.cache):
        torch.testing.assert_close(k1, k2, rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(v1, v2, rtol=1e-6, atol=1e-6)


def test_greedy_rollouts_write_the_same_completions_either_way(tiny, monkeypatch):
    model, tok = tiny
    lean = rollout(model, tok, PROMPTS * 4, 6, temperature=0.0)
    monkeypatch.setattr(decode, "lean_ok", lambda m: False)  # HF's forward for every step
    hf = rollout(model, tok, PROMPTS * 4, 6, temperature=0.0)
    assert lean.completions == hf.completions
    assert torch.equal(lean.completion_mask, hf.completion_mask)


def test_what_the_lean_step_cannot_copy_goes_to_hf(tiny):
    model, _ = tiny
    assert decode.lean_ok(model)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert not decode.lean_ok(model)  # autocast's casts are HF's to make
    lora = lk.models.add_lora(lk.load_policy("tiny")[0], r=2, alpha=4)
    assert not decode.lean_ok(lora)
    biased = LlamaForCausalLM(
        LlamaConfig(
            vocab_size=20,
            hidden_size=32,
            intermediate_size=48,
            num_hidden_layers=1,
            num_attention_heads=2,
            attention_bias=True,
        )
    )
    assert not decode.lean_ok(biased)
    assert not decode.lean_ok(biased.half())


@pytest.mark.parametrize("lean", [True, False])
def test_sampling_takes_the_chosen_decoder(tiny, monkeypatch, lean):
    """Mutation check: the rollout really runs the lean step when it may (and HF's when not)."""
    model, tok = tiny
    calls = []
    for cls in (decode.HFDecoder, decode.LlamaDecoder):
        original = cls.__call__  # the steps: the prompt pass is LlamaDecoder.prefill
        monkeypatch.setattr(
            cls,
            "__call__",
            lambda self, *a, _o=original, _c=cls: calls.append(_c.__name__) or _o(self, *a),
        )
    monkeypatch.setattr(decode, "lean_ok", lambda m: lean)
    rollout(model, tok, PROMPTS, 4, temperature=1.0, generator=torch.Generator().manual_seed(0))
    assert calls and set(calls) == {"LlamaDecoder" if lean else "HFDecoder"}
