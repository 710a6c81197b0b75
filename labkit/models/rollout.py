"""Rollouts: sample completions with a KV cache, then score them with a forward pass.

A :class:`Batch` holds everything one GRPO step needs: left-padded prompts, right-padded
completions with their mask (the end-of-sequence token included), the decoded texts, and the
old and reference log-probs of every sampled token.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from labkit.core.logprobs import token_logprobs
from labkit.models.prefix import completion_logits, prompt_forward


@dataclass
class Batch:
    prompt_ids: torch.Tensor  # [B, P] left-padded
    prompt_mask: torch.Tensor  # [B, P]
    completion_ids: torch.Tensor  # [B, T] right-padded with pad
    completion_mask: torch.Tensor  # [B, T] 1 up to and including eos
    truncated: torch.Tensor  # [B] bool: no eos within max_completion_length
    prompts: list[str]
    completions: list[str]
    old_logp: torch.Tensor | None = None  # [B, T]
    ref_logp: torch.Tensor | None = None  # [B, T]
    extra: dict = field(default_factory=dict)

    @property
    def lengths(self) -> torch.Tensor:  # [B] completion tokens, eos included
        return self.completion_mask.sum(-1)

    def select(self, idx: torch.Tensor) -> Batch:
        """The rows ``idx`` ([n] long) of this batch (tensors, texts and log-probs)."""
        rows = idx.tolist()
        pick = (lambda x: None if x is None else x[idx])
        return Batch(self.prompt_ids[idx], self.prompt_mask[idx], self.completion_ids[idx],
                     self.completion_mask[idx], self.truncated[idx],
                     [self.prompts[i] for i in rows], [self.completions[i] for i in rows],
                     pick(self.old_logp), pick(self.ref_logp),
                     {k: v[idx] for k, v in self.extra.items() if k == "sampling_mask"})


def _pad(x: torch.Tensor, width: int, value, left: bool) -> torch.Tensor:
    extra = x.new_full((x.shape[0], width - x.shape[1]), value)  # [B, width - W]
    return torch.cat([extra, x] if left else [x, extra], 1)


def concat_batches(batches: list[Batch], pad_id: int) -> Batch:
    """Rows of several batches in one (prompts re-padded on the left, completions on the right)."""
    P = max(b.prompt_ids.shape[1] for b in batches)
    T = max(b.completion_ids.shape[1] for b in batches)
    cat = (lambda xs: torch.cat(xs, 0))
    out = Batch(cat([_pad(b.prompt_ids, P, pad_id, True) for b in batches]),
                cat([_pad(b.prompt_mask, P, 0, True) for b in batches]),
                cat([_pad(b.completion_ids, T, pad_id, False) for b in batches]),
                cat([_pad(b.completion_mask, T, 0, False) for b in batches]),
                cat([b.truncated for b in batches]),
                [p for b in batches for p in b.prompts],
                [c for b in batches for c in b.completions])
    if all("sampling_mask" in b.extra for b in batches):  # padded steps allow every token
        masks = [b.extra["sampling_mask"] for b in batches]  # [B, T_b, V]
        out.extra["sampling_mask"] = cat([torch.cat([m, m.new_ones(m.shape[0], T - m.shape[1],
                                                                   m.shape[2])], 1)
                                          for m in masks])  # [B, T, V]
    return out


def _filter_logits(logits: torch.Tensor, top_k: int, top_p: float) -> torch.Tensor:
    """Keep the top-k tokens and the smallest set with cumulative probability >= top_p."""
    if top_k and top_k < logits.shape[-1]:
        kth = logits.topk(top_k, dim=-1).values[..., -1:]  # [B, 1]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, idx = logits.sort(dim=-1, descending=True)  # [B, V]
        cum = sorted_logits.softmax(-1).cumsum(-1)
        drop = cum - sorted_logits.softmax(-1) >= top_p  # mass before this token already enough
        logits = logits.masked_fill(drop.scatter(-1, idx, drop), float("-inf"))
    return logits


@torch.no_grad()
def sample(model, prompt_ids, prompt_mask, max_new_tokens: int, eos_id: int, pad_id: int,
           temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0,
           generator: torch.Generator | None = None, keep: list | None = None):
    """Sample up to ``max_new_tokens`` per row: ``(completion_ids [B, T], mask [B, T], truncated [B])``.

    ``temperature=0`` is greedy decoding. Rows stop at ``eos_id``; later positions are ``pad_id``.
    ``keep``: a list that receives, per step, the [B, V] bool mask of tokens top-k/top-p allowed.
    """
    B = prompt_ids.shape[0]
    attn = prompt_mask.clone()  # [B, P]
    past, logits, _ = prompt_forward(model, prompt_ids, prompt_mask)  # each prompt once
    nxt = attn.sum(-1)  # [B] position of the first new token (left padding ignored)
    done = torch.zeros(B, dtype=torch.bool)
    ids, mask = [], []
    for t in range(max_new_tokens):
        if temperature == 0:
            tok = logits.argmax(-1)  # [B]
        else:
            probs = _filter_logits(logits.float() / temperature, top_k, top_p).softmax(-1)
            if keep is not None:
                keep.append(probs > 0)  # [B, V]
            tok = torch.multinomial(probs, 1, generator=generator).squeeze(-1)  # [B]
        ids.append(torch.where(done, torch.full_like(tok, pad_id), tok))
        mask.append(~done)
        done = done | (tok == eos_id)
        if done.all() or t == max_new_tokens - 1:
            break
        attn = torch.cat([attn, torch.ones(B, 1, dtype=attn.dtype)], dim=1)
        out = model(input_ids=ids[-1][:, None], attention_mask=attn, position_ids=nxt[:, None],
                    past_key_values=past, use_cache=True)
        past, logits, nxt = out.past_key_values, out.logits[:, -1], nxt + 1
    return torch.stack(ids, 1), torch.stack(mask, 1).long(), ~done


def completion_logprobs(model, batch: Batch, temperature: float = 1.0, return_logits=False):
    """log pi(o_t | q, o_<t) of each completion token: [B, T] (and the logits [B, T, V]).

    With ``batch.extra["sampling_mask"]`` (see :func:`rollout`), log pi is renormalised over the
    tokens top-k/top-p allowed when the token was sampled; the returned logits stay unmasked.
    """
    logits = completion_logits(model, batch.prompt_ids, batch.prompt_mask, batch.completion_ids,
                               batch.completion_mask)  # [B, T, V], each distinct prompt run once
    allowed = batch.extra.get("sampling_mask")  # [B, T, V] or None
    masked = logits if allowed is None else logits.masked_fill(~allowed, float("-inf"))
    logp = token_logprobs(masked, batch.completion_ids, temperature)  # [B, T]
    return (logp, logits) if return_logits else logp


def rollout(model, tokenizer, prompts: list[str], max_completion_length: int,
            temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0,
            generator: torch.Generator | None = None, keep_sampling_mask: bool = False) -> Batch:
    """Sample one completion per prompt (repeat prompts for a group) and decode them.

    ``keep_sampling_mask``: store the top-k/top-p mask of every step in
    ``batch.extra["sampling_mask"]`` ([B, T, V] bool), so training log-probs use the same
    truncation as sampling (off by default: it costs B x T x V booleans).
    """
    distinct = list(dict.fromkeys(prompts))  # a group's prompt is tokenized once
    enc = tokenizer(distinct, return_tensors="pt", padding=True, add_special_tokens=False)
    where = {p: i for i, p in enumerate(distinct)}
    row = torch.tensor([where[p] for p in prompts], dtype=torch.long)  # [B]
    enc = {k: v[row] for k, v in enc.items()}
    was_training = model.training
    model.eval()
    keep = [] if keep_sampling_mask and temperature > 0 else None
    ids, mask, truncated = sample(
        model, enc["input_ids"], enc["attention_mask"], max_completion_length,
        tokenizer.eos_token_id, tokenizer.pad_token_id, temperature, top_k, top_p, generator, keep)
    model.train(was_training)
    texts = tokenizer.batch_decode(ids, skip_special_tokens=True)
    batch = Batch(enc["input_ids"], enc["attention_mask"], ids, mask, truncated, list(prompts), texts)
    if keep:
        batch.extra["sampling_mask"] = torch.stack(keep[:ids.shape[1]], 1)  # [B, T, V]
    return batch
