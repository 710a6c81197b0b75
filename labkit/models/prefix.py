"""Forward passes that share the prompt across a group: each distinct prompt is run once.

GRPO samples G completions per prompt, so a batch of B = P x G rows holds only P distinct
prompts. Running the model over all B rows of prompt + completion repeats the prompt's work G
times. Here the prompt is run once per distinct prompt with a KV cache, the cache is gathered
back to the B rows (``Cache.reorder_cache``, an ``index_select``, differentiable), and only the
completion tokens are run on top of it. The logits are the same numbers (to float rounding) as
one forward over the concatenated rows, and so are the gradients: autograd sums the G uses of
each prompt's keys and values. TRL runs every row in full; vLLM's prefix caching is the same
idea at inference time.

When every prompt has the same number G of rows and the packed row is short
(``P + G x (T - 1) <= PACK_MAX``: a completion's last token is not run, it predicts nothing),
the training forwards go one step further: each prompt and its G completions are packed into
one row, ``[prompt | o_1 | ... | o_G]``, with an attention mask that
lets o_j see the prompt and its own earlier tokens only, and positions that restart after the
prompt for every o_j (Liu et al. 2025, "Prefix Grouper: Efficient GRPO Training through
Shared-Prefix Forward", arXiv 2506.05433). One forward instead of two (prompt, then completions
over its gathered cache), and no gather of the cache to undo in backward: on the CPU's small
batches the cost is the number of ops, not the FLOPs. Departure from the paper: one attention
with a [S, S] mask instead of its split into prefix and suffix attention (same numbers; the mask
costs S^2 per prompt, hence ``PACK_MAX``).
"""

from __future__ import annotations

import functools
import inspect

import torch

from labkit.models.policy import is_checkpointing, is_peft


@functools.cache
def _cache_name(cls: type) -> str:
    params = inspect.signature(cls.forward).parameters  # follows a deprecation wrapper
    return "cache" if "cache" in params else "past_key_values"


def with_cache(model, past) -> dict:
    """The forward's keyword for a KV cache: ``{"cache": past}`` where the model takes it
    (transformers >= 5.24, which warns at every call that ``past_key_values`` goes in 5.40),
    else ``{"past_key_values": past}`` (the pinned 5.23). A peft model passes it on to its base.

    >>> from labkit.models.policy import tiny_policy
    >>> list(with_cache(tiny_policy()[0], None))[0] in ("cache", "past_key_values")
    True
    """
    base = model.get_base_model() if is_peft(model) else model
    return {_cache_name(type(base)): past}


def cache_of(out):
    """The KV cache a forward returned: ``out.cache`` (>= 5.24), else ``out.past_key_values``."""
    # not out.get("cache", out.past_key_values): that reads the deprecated name (a warning)
    return out["cache"] if "cache" in out else out.past_key_values  # noqa: SIM401


def distinct_prompts(prompt_ids: torch.Tensor, prompt_mask: torch.Tensor):
    """``(ids [U, P], mask [U, P], index [B])`` with ``ids[index] == prompt_ids``, or ``None``
    when no prompt repeats (then sharing saves nothing).

    >>> ids = torch.tensor([[5, 6], [7, 8], [5, 6]])
    >>> u, m, index = distinct_prompts(ids, torch.ones_like(ids))
    >>> u.tolist(), index.tolist()
    ([[5, 6], [7, 8]], [0, 1, 0])
    """
    P = prompt_ids.shape[1]
    rows, index = torch.unique(
        torch.cat([prompt_ids, prompt_mask.to(prompt_ids.dtype)], 1), dim=0, return_inverse=True
    )  # [U, 2P], [B]
    if rows.shape[0] == prompt_ids.shape[0]:
        return None
    return rows[:, :P], rows[:, P:].to(prompt_mask.dtype), index


def prompt_forward(
    model, prompt_ids: torch.Tensor, prompt_mask: torch.Tensor, shared=None, hidden: bool = False
):
    """Run the (left-padded) prompts once per distinct prompt: ``(past, logits [B, V], h)``.

    ``past`` is the KV cache of all B rows, ``logits`` predict each row's first new token, ``h``
    is the last layer's hidden state there ([B, H], when ``hidden``; else None).
    ``shared``: :func:`distinct_prompts` of these prompts when the caller has it already.
    """
    shared = shared or distinct_prompts(prompt_ids, prompt_mask)
    ids, mask = (prompt_ids, prompt_mask) if shared is None else shared[:2]
    pos = (mask.cumsum(-1) - 1).clamp(min=0)  # [U, P] positions that ignore left padding
    out = model(
        input_ids=ids,
        attention_mask=mask,
        position_ids=pos,
        use_cache=True,
        output_hidden_states=hidden,
        logits_to_keep=1,
    )  # no LM head on the prompt
    past, logits = cache_of(out), out.logits[:, -1]  # [U, V]
    h = out.hidden_states[-1][:, -1] if hidden else None  # [U, H]
    if shared is not None:
        past.reorder_cache(shared[2])
        logits, h = logits[shared[2]], None if h is None else h[shared[2]]  # [B, V], [B, H]
    return past, logits, h


PACK_MAX = 100
"""Longest packed row (prompt + G completions, tokens) the training forwards pack; longer ones
take the KV-cache path, whose attention does not grow as (G T)^2. On the tiny policy (forward +
backward, ``benchmarks/prefix_packing.txt``) packed / cache is 0.73 at 22 tokens, 0.83-0.88 at
70, 1.02-1.03 at 134 and 1.7 at 518."""


def packed_mask(prompt_mask: torch.Tensor, completion_mask: torch.Tensor) -> torch.Tensor:
    """The packed rows' attention: ``[U, 1, S, S]`` bool, True where query s may see key k.

    prompt_mask [U, P]; completion_mask [U, G, T] (each prompt's G completions). Query s sees
    key k <= s when k is a prompt token or in s's own completion, and k is not padding; every
    query sees itself, so a padded query's row is never empty (its output is discarded).

    >>> packed_mask(torch.ones(1, 1), torch.ones(1, 2, 1))[0, 0].int().tolist()
    [[1, 0, 0], [1, 1, 0], [1, 0, 1]]
    """
    U, G, T = completion_mask.shape
    P, dev = prompt_mask.shape[1], prompt_mask.device
    seg = torch.cat(
        [torch.full((P,), -1, device=dev), torch.arange(G, device=dev).repeat_interleave(T)]
    )  # [S] -1: prompt
    idx = torch.arange(seg.shape[0], device=dev)  # [S]
    sees = (idx[None] <= idx[:, None]) & ((seg[None] == -1) | (seg[None] == seg[:, None]))
    keys = torch.cat([prompt_mask, completion_mask.reshape(U, G * T)], 1).bool()  # [U, S]
    sees = (sees[None] & keys[:, None]) | torch.eye(
        seg.shape[0], dtype=torch.bool, device=dev
    )  # [U, S, S]
    return sees[:, None]


def packed_outputs(model, shared, completion_ids, completion_mask, hidden: bool = False):
    """:func:`completion_outputs` by one forward over packed rows ``[prompt | o_1 .. o_G]``
    (module docstring), or None when it does not apply: groups of unequal size, a packed row
    longer than ``PACK_MAX``, or an attention other than SDPA (HF's eager attention adds the
    mask; flash attention ignores a 4-D one). Each completion's last token is left out of the
    row: it predicts nothing the loss needs, and no other token attends to it."""
    ids, mask, index = shared
    (U, P), (B, T) = ids.shape, completion_ids.shape
    G = B // U
    if B != U * G or P + G * (T - 1) > PACK_MAX or not _takes_4d_mask(model):
        return None
    order = index.argsort(stable=True)  # [B] rows grouped by their prompt
    dev = ids.device
    if not torch.equal(index[order], torch.arange(U, device=dev).repeat_interleave(G)):
        return None  # one host sync: are the groups all of size G?
    c_mask = completion_mask[order].view(U, G, T)[..., :-1]  # [U, G, T-1] the inputs' mask
    n = mask.sum(-1)[:, None, None]  # [U, 1, 1] prompt tokens (left padding not counted)
    pos = torch.cat(
        [
            (mask.cumsum(-1) - 1).clamp(min=0),  # as one row per completion would
            (n + c_mask.cumsum(-1) - 1).clamp(min=0).view(U, G * (T - 1)),
        ],
        1,
    )
    inputs = completion_ids[order].view(U, G, T)[..., :-1].reshape(U, G * (T - 1))
    out = model(
        input_ids=torch.cat([ids, inputs], 1),
        attention_mask=packed_mask(mask, c_mask),
        position_ids=pos,
        use_cache=False,
        output_hidden_states=hidden,
        logits_to_keep=G * (T - 1) + 1,
    )  # from the last prompt token on
    back = order.argsort()  # [B] sorted row -> original row

    def unpack(x):  # [U, 1 + G (T-1), D] -> [B, T, D]; o_j's token t is predicted at t-1
        first = x[:, :1, None].expand(U, G, 1, x.shape[-1])  # [U, G, 1, D]
        rest = x[:, 1:].reshape(U, G, T - 1, x.shape[-1])  # [U, G, T-1, D]
        return torch.cat([first, rest], 2).view(B, T, -1)[back]

    h = unpack(out.hidden_states[-1][:, P - 1 :]) if hidden else None
    return unpack(out.logits), h


def _takes_4d_mask(model) -> bool:
    return getattr(getattr(model, "config", None), "_attn_implementation", None) == "sdpa"


def completion_logits(model, prompt_ids, prompt_mask, completion_ids, completion_mask):
    """Logits that predict every completion token: [B, T, V] (``logits[:, t]`` -> ``ids[:, t]``).

    Distinct prompts are run once (see the module docstring): packed with their completions
    when short, else through a gathered KV cache; a batch whose prompts are all different takes
    one plain forward over prompt + completion.
    """
    return completion_outputs(model, prompt_ids, prompt_mask, completion_ids, completion_mask)[0]


def completion_outputs(
    model,
    prompt_ids,
    prompt_mask,
    completion_ids,
    completion_mask,
    hidden: bool = False,
    pack: bool = True,
):
    """``(logits [B, T, V], h [B, T, H] or None)``: :func:`completion_logits` and, when
    ``hidden``, the last layer's hidden state at the same positions (the state before each
    completion token, where PPO's value head reads V(s_t)). ``pack=False`` skips the packed
    forward (and the host sync of its check)."""
    shared = distinct_prompts(prompt_ids, prompt_mask)
    packed = (
        None
        if shared is None or not pack
        else packed_outputs(model, shared, completion_ids, completion_mask, hidden)
    )
    if packed is not None:
        return packed
    P = prompt_ids.shape[1]
    attn = torch.cat([prompt_mask, completion_mask], 1)  # [B, P+T]
    pos = (attn.cumsum(-1) - 1).clamp(min=0)  # [B, P+T]
    if shared is None or is_checkpointing(model):  # checkpointed layers drop a KV cache
        ids = torch.cat([prompt_ids, completion_ids[:, :-1]], 1)  # [B, P+T-1]: the last token
        T = completion_ids.shape[1]  # predicts nothing, so it is not run
        out = model(
            input_ids=ids,
            attention_mask=attn[:, :-1],
            position_ids=pos[:, :-1],
            use_cache=False,
            output_hidden_states=hidden,
            logits_to_keep=T,
        )  # positions P-1 .. P+T-2
        return out.logits, out.hidden_states[-1][:, P - 1 :] if hidden else None
    past, first, h0 = prompt_forward(model, prompt_ids, prompt_mask, shared, hidden)  # [B, V]
    if completion_ids.shape[1] == 1:
        return first[:, None], None if h0 is None else h0[:, None]
    out = model(
        input_ids=completion_ids[:, :-1],
        attention_mask=attn[:, :-1],
        position_ids=pos[:, P:-1],
        **with_cache(model, past),
        output_hidden_states=hidden,
    )
    logits = torch.cat([first[:, None], out.logits], 1)  # [B, T, V]
    return logits, torch.cat([h0[:, None], out.hidden_states[-1]], 1) if hidden else None
