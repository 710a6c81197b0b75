"""Forward passes that share the prompt across a group: each distinct prompt is run once.

GRPO samples G completions per prompt, so a batch of B = P x G rows holds only P distinct
prompts. Running the model over all B rows of prompt + completion repeats the prompt's work G
times. Here the prompt is run once per distinct prompt with a KV cache, the cache is gathered
back to the B rows (``Cache.reorder_cache``, an ``index_select``, differentiable), and only the
completion tokens are run on top of it. The logits are the same numbers (to float rounding) as
one forward over the concatenated rows, and so are the gradients: autograd sums the G uses of
each prompt's keys and values. TRL runs every row in full; vLLM's prefix caching is the same
idea at inference time.
"""

from __future__ import annotations

import torch

from labkit.models.policy import is_checkpointing


def distinct_prompts(prompt_ids: torch.Tensor, prompt_mask: torch.Tensor):
    """``(ids [U, P], mask [U, P], index [B])`` with ``ids[index] == prompt_ids``, or ``None``
    when no prompt repeats (then sharing saves nothing).

    >>> ids = torch.tensor([[5, 6], [7, 8], [5, 6]])
    >>> u, m, index = distinct_prompts(ids, torch.ones_like(ids))
    >>> u.tolist(), index.tolist()
    ([[5, 6], [7, 8]], [0, 1, 0])
    """
    P = prompt_ids.shape[1]
    rows, index = torch.unique(torch.cat([prompt_ids, prompt_mask.to(prompt_ids.dtype)], 1),
                               dim=0, return_inverse=True)  # [U, 2P], [B]
    if rows.shape[0] == prompt_ids.shape[0]:
        return None
    return rows[:, :P], rows[:, P:].to(prompt_mask.dtype), index


def prompt_forward(model, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor, shared=None,
                   hidden: bool = False):
    """Run the (left-padded) prompts once per distinct prompt: ``(past, logits [B, V], h)``.

    ``past`` is the KV cache of all B rows, ``logits`` predict each row's first new token, ``h``
    is the last layer's hidden state there ([B, H], when ``hidden``; else None).
    ``shared``: :func:`distinct_prompts` of these prompts when the caller has it already.
    """
    shared = shared or distinct_prompts(prompt_ids, prompt_mask)
    ids, mask = (prompt_ids, prompt_mask) if shared is None else shared[:2]
    pos = (mask.cumsum(-1) - 1).clamp(min=0)  # [U, P] positions that ignore left padding
    out = model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=True,
                output_hidden_states=hidden, logits_to_keep=1)  # no LM head on the prompt
    past, logits = out.past_key_values, out.logits[:, -1]  # [U, V]
    h = out.hidden_states[-1][:, -1] if hidden else None  # [U, H]
    if shared is not None:
        past.reorder_cache(shared[2])
        logits, h = logits[shared[2]], None if h is None else h[shared[2]]  # [B, V], [B, H]
    return past, logits, h


def completion_logits(model, prompt_ids, prompt_mask, completion_ids, completion_mask):
    """Logits that predict every completion token: [B, T, V] (``logits[:, t]`` -> ``ids[:, t]``).

    Distinct prompts are run once (see the module docstring); a batch whose prompts are all
    different takes one plain forward over prompt + completion.
    """
    return completion_outputs(model, prompt_ids, prompt_mask, completion_ids, completion_mask)[0]


def completion_outputs(model, prompt_ids, prompt_mask, completion_ids, completion_mask,
                       hidden: bool = False):
    """``(logits [B, T, V], h [B, T, H] or None)``: :func:`completion_logits` and, when
    ``hidden``, the last layer's hidden state at the same positions (the state before each
    completion token, where PPO's value head reads V(s_t))."""
    P = prompt_ids.shape[1]
    attn = torch.cat([prompt_mask, completion_mask], 1)  # [B, P+T]
    pos = (attn.cumsum(-1) - 1).clamp(min=0)  # [B, P+T]
    # checkpointed layers drop the prompt's KV cache when training: one plain forward then
    shared = None if is_checkpointing(model) else distinct_prompts(prompt_ids, prompt_mask)
    if shared is None:
        ids = torch.cat([prompt_ids, completion_ids], 1)  # [B, P+T]
        T = completion_ids.shape[1]
        out = model(input_ids=ids, attention_mask=attn, position_ids=pos, use_cache=False,
                    output_hidden_states=hidden, logits_to_keep=T + 1)  # positions P-1 .. P+T-1
        return out.logits[:, :-1], out.hidden_states[-1][:, P - 1:-1] if hidden else None
    past, first, h0 = prompt_forward(model, prompt_ids, prompt_mask, shared, hidden)  # [B, V]
    if completion_ids.shape[1] == 1:
        return first[:, None], None if h0 is None else h0[:, None]
    out = model(input_ids=completion_ids[:, :-1], attention_mask=attn[:, :-1],
                position_ids=pos[:, P:-1], past_key_values=past, output_hidden_states=hidden)
    logits = torch.cat([first[:, None], out.logits], 1)  # [B, T, V]
    return logits, torch.cat([h0[:, None], out.hidden_states[-1]], 1) if hidden else None

