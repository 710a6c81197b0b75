"""labkit's own model calls run with warnings as errors: on the pinned transformers, and on a
model shaped like transformers >= 5.24's, whose forward takes ``cache`` and warns (FutureWarning)
at every call that passes ``past_key_values`` ("will be removed in version 5.40.0")."""

import copy
import warnings
from dataclasses import dataclass

import pytest
import torch
from transformers import LlamaForCausalLM
from transformers.modeling_outputs import ModelOutput
from transformers.utils.deprecation import deprecate_kwarg

import labkit as lk
from labkit.models.prefix import cache_of, with_cache


@dataclass
class NextOutput(ModelOutput):
    """5.24's CausalLMOutputWithPast: the cache is ``cache``; the old name still answers, warning."""

    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    cache: object = None
    hidden_states: tuple | None = None
    attentions: tuple | None = None

    @property
    def past_key_values(self):
        warnings.warn(
            "`past_key_values`/`cache_params` are deprecated. Use `cache` instead.",
            FutureWarning,
            stacklevel=2,
        )
        return self.cache


class NextLlama(LlamaForCausalLM):
    """The pinned Llama behind 5.24's forward signature (deprecate_kwarg, as 5.24 declares it)."""

    @deprecate_kwarg("past_key_values", "5.40.0", new_name="cache")
    def forward(
        self,
        input_ids=None,
        attention_mask=None,
        position_ids=None,
        cache=None,
        use_cache=None,
        **kwargs,
    ):
        out = super().forward(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            past_key_values=cache,
            use_cache=use_cache,
            **kwargs,
        )
        return NextOutput(
            logits=out.logits, cache=out.past_key_values, hidden_states=out.hidden_states
        )


@pytest.fixture
def next_tiny(tiny):
    model, tok = tiny
    model.__class__ = NextLlama  # not a plain LlamaForCausalLM: sampling takes HF's forward
    return model, tok


def strict_steps(model, tok, **kw):
    """Two GRPO steps (sampling, scoring, pi_old/pi_ref, training forwards) with warnings as
    errors; long completions (G x T > PACK_MAX) so the training forwards take the KV-cache path."""
    tr = lk.GRPOTrainer(
        model,
        tokenizer=tok,
        num_generations=4,
        prompts_per_step=2,
        max_completion_length=40,
        num_iterations=2,
        beta=0.04,
        max_steps=2,
        reward_funcs=["length_target"],
        task="short_prompts",
        **kw,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tr.train(progress=False)
    return tr


def test_the_next_transformers_gets_cache_and_no_deprecated_name(next_tiny):
    model, tok = next_tiny
    assert list(with_cache(model, None)) == ["cache"]
    tr = strict_steps(model, tok)
    assert len(tr.log.metrics) == 2


def test_the_pinned_transformers_runs_labkits_calls_without_a_warning(tiny):
    model, tok = tiny
    assert list(with_cache(model, None)) == ["past_key_values"]  # 5.23: the fallback
    strict_steps(model, tok)  # the lean decoder and packed forwards
    lora = lk.models.add_lora(copy.deepcopy(model), r=2, alpha=4, target_modules=["q_proj"])
    strict_steps(lora, tok)  # peft: HF's forward for sampling, the adapter off for pi_ref


def test_cache_of_reads_either_name():
    out = NextOutput(logits=torch.zeros(1), cache="kv")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cache_of(out) == "kv"
