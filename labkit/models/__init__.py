"""Policies and what runs them: loading (``policy``: the shipped ``tiny``, local folders, hub ids,
LoRA), SmolLM2 offline (``smollm2``), sampling and the :class:`~labkit.models.rollout.Rollout`
record (``rollout``), one decoding step (``decode``: HF's, or a lean one for plain Llamas), and
forward passes that run a group's shared prompt once (``prefix``).
"""

from labkit.models.policy import (
    BUILTIN,
    CHECKPOINTS,
    add_lora,
    char_tokenizer,
    frozen_copy,
    is_peft,
    load_policy,
    tiny_config,
    tiny_policy,
)

__all__ = [
    "BUILTIN",
    "CHECKPOINTS",
    "add_lora",
    "char_tokenizer",
    "frozen_copy",
    "is_peft",
    "load_policy",
    "tiny_config",
    "tiny_policy",
]
