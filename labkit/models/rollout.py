"""The Rollout record and what fills it: sampling with a KV cache, log-probs of completions.

One :class:`Rollout` carries a step from generation to the run log: the generator fills the
tokens and texts (:func:`rollout`), the trainer adds pi_old / pi_ref log-probs, rewards (total
and per function), correctness, advantages and the loss mask; the step records read it
(:mod:`labkit.runs.records`). :func:`tokenize_pairs` makes one from given (prompt, target) pairs
(SFT, DPO, reward models), as a rollout would have.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import torch

from labkit.core.logprobs import token_logprobs
from labkit.models.decode import decoder
from labkit.models.prefix import completion_logits


@dataclass
class Rollout:
    """One batch of B = prompts x G completions, grouped contiguously, and what a step learns
    about them. Tensors are on the policy's device; [B] per completion, [B, T] per token."""

    prompt_ids: torch.Tensor  # [B, P] left-padded
    prompt_mask: torch.Tensor  # [B, P]
    completion_ids: torch.Tensor  # [B, T] right-padded with pad
    completion_mask: torch.Tensor  # [B, T] 1 up to and including eos
    truncated: torch.Tensor  # [B] bool: no eos within max_completion_length
    prompts: list[str]
    completions: list[str]
    examples: list | None = None  # [B] task examples (the reward functions' columns)
    sampling_mask: torch.Tensor | None = None  # [B, T, V] tokens top-k/top-p allowed
    old_logp: torch.Tensor | None = None  # [B, T] log pi_old of each sampled token
    ref_logp: torch.Tensor | None = None  # [B, T] log pi_ref
    rewards: torch.Tensor | None = None  # [B] weighted sum over reward functions
    rewards_per_func: dict[str, list[float]] = field(default_factory=dict)  # NaN: None
    reward_logs: dict[str, list] = field(default_factory=dict)  # [B] per column: log_extra's
    correct: torch.Tensor | None = None  # [B] bool: the task's verifier
    advantages: torch.Tensor | None = None  # [B] (GRPO family) or [B, T] (PPO's GAE)
    loss_mask: torch.Tensor | None = None  # [B, T] float: tokens the loss counts
    values: torch.Tensor | None = None  # [B, T] PPO: the critic's V_old(s_t)
    returns: torch.Tensor | None = None  # [B, T] PPO: GAE's R_t = A_t + V_old(s_t)
    token_rewards: torch.Tensor | None = None  # [B, T] PPO: r_t = -beta KL_t (+ score at eos)
    info: dict = field(default_factory=dict)  # scalars of how it was collected
    sample_logp: torch.Tensor | None = None  # [B, T] log pi of each token as it was sampled
    sample_entropy: torch.Tensor | None = None  # [B, T] entropy of pi where each token was sampled
    # multi-turn episodes (labkit.models.episode); None / empty for single-turn rollouts
    env_mask: torch.Tensor | None = None  # [B, T] 1 = the policy wrote it, 0 = the environment
    turn_ends: list | None = None  # [B] lists: token index after each policy turn
    turn_rewards: list | None = None  # [B] lists: reward credited to each turn
    tool_calls: torch.Tensor | None = None  # [B] tool calls in the episode
    tool_failures: list | None = None  # [B] lists: each failed call's fault ("timeout", ...)
    cut: list | None = None  # [B] "" or why the episode was truncated ("tokens", "turns")

    @property
    def lengths(self) -> torch.Tensor:  # [B] completion tokens, eos included
        return self.completion_mask.sum(-1)

    def __len__(self) -> int:
        return self.completion_ids.shape[0]

    def select(self, idx: torch.Tensor) -> Rollout:
        """The rows ``idx`` ([n] long) of every per-completion field."""
        rows = idx.tolist()
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, torch.Tensor):
                v = v[idx]
            elif isinstance(v, list):
                v = [v[i] for i in rows]
            elif f.name in ("rewards_per_func", "reward_logs"):
                v = {k: [x[i] for i in rows] for k, x in v.items()}
            out[f.name] = v
        return Rollout(**out)


def _pad(x: torch.Tensor, width: int, value, left: bool) -> torch.Tensor:
    extra = x.new_full((x.shape[0], width - x.shape[1]), value)  # [B, width - W]
    return torch.cat([extra, x] if left else [x, extra], 1)


def concat(parts: list[Rollout], pad_id: int) -> Rollout:
    """Rows of several freshly scored rollouts in one (prompts re-padded on the left,
    completions on the right); log-probs and advantages are not carried (computed after)."""
    P = max(b.prompt_ids.shape[1] for b in parts)
    T = max(b.completion_ids.shape[1] for b in parts)
    cat = lambda xs: torch.cat(xs, 0)
    out = Rollout(
        cat([_pad(b.prompt_ids, P, pad_id, True) for b in parts]),
        cat([_pad(b.prompt_mask, P, 0, True) for b in parts]),
        cat([_pad(b.completion_ids, T, pad_id, False) for b in parts]),
        cat([_pad(b.completion_mask, T, 0, False) for b in parts]),
        cat([b.truncated for b in parts]),
        [p for b in parts for p in b.prompts],
        [c for b in parts for c in b.completions],
        [e for b in parts for e in b.examples],
        rewards=cat([b.rewards for b in parts]),
        rewards_per_func={
            k: [v for b in parts for v in b.rewards_per_func[k]] for k in parts[0].rewards_per_func
        },
        reward_logs={
            k: [v for b in parts for v in b.reward_logs.get(k, [None] * len(b))]
            for k in dict.fromkeys(k for b in parts for k in b.reward_logs)
        },
    )
    if all(b.sampling_mask is not None for b in parts):  # padded steps allow every token
        masks = [b.sampling_mask for b in parts]  # [B, T_b, V]
        out.sampling_mask = cat(
            [torch.cat([m, m.new_ones(m.shape[0], T - m.shape[1], m.shape[2])], 1) for m in masks]
        )  # [B, T, V]
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


def stop_check(device: torch.device, t: int) -> bool:
    """Whether sampling step ``t`` asks if every row has ended (a host sync on a GPU).

    On the CPU every step asks (no device to wait for; stopping early saves forwards); on a
    GPU only at t = 3, 7, 15, 31, ... so one rollout syncs O(log T) times, not T times.
    """
    return device.type == "cpu" or ((t + 1) & t) == 0 and t >= 3


@torch.no_grad()
def sample(
    model,
    prompt_ids,
    prompt_mask,
    max_new_tokens: int,
    *,
    eos_id: int,
    pad_id: int,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    generator: torch.Generator | None = None,
    keep: list | None = None,
    keep_logp: list | None = None,
    stop_ids: list[int] | None = None,
    keep_entropy: list | None = None,
):
    """Sample up to ``max_new_tokens`` per row: ``(completion_ids [B, T], mask [B, T], truncated [B])``.

    ``temperature=0`` is greedy decoding. Rows stop at ``eos_id``; later positions are ``pad_id``.
    ``keep``: a list that receives, per step, the [B, V] bool mask of tokens top-k/top-p allowed.
    ``keep_logp``: a list that receives, per step, log pi_sample(token) [B] as sampled (fp32 of
    the filtered, tempered distribution; under autocast, of the low-precision logits).
    ``stop_ids``: more tokens that end a row, as eos does (a tool call's last token in a
    multi-turn episode, :mod:`labkit.models.episode`); ``truncated`` is then "no stop token".
    ``keep_entropy``: a list that receives, per step, the entropy [B] of the (filtered,
    tempered) distribution each token was sampled from.
    """
    B, dev = prompt_ids.shape[0], prompt_ids.device
    step, logits = decoder(
        model, prompt_ids, prompt_mask, max_new_tokens
    )  # each prompt once; tok [B], pos [B] -> logits [B, V]
    nxt = prompt_mask.sum(-1)  # [B] position of the first new token (left padding ignored)
    done = torch.zeros(B, dtype=torch.bool, device=dev)
    stops = torch.tensor([eos_id, *(stop_ids or [])], device=dev)  # [S]
    ids, mask = [], []
    for t in range(max_new_tokens):
        if temperature == 0:
            tok = logits.argmax(-1)  # [B]
        else:
            probs = _filter_logits(logits.float() / temperature, top_k, top_p).softmax(-1)
            if keep is not None:
                keep.append(probs > 0)  # [B, V]
            tok = torch.multinomial(probs, 1, generator=generator).squeeze(-1)  # [B]
            if keep_logp is not None:
                keep_logp.append(probs.gather(-1, tok[:, None]).squeeze(-1).log())  # [B]
            if keep_entropy is not None:
                keep_entropy.append(torch.special.entr(probs).sum(-1))  # [B], 0 log 0 = 0
        ids.append(torch.where(done, torch.full_like(tok, pad_id), tok))
        mask.append(~done)
        done = done | torch.isin(tok, stops)
        if t == max_new_tokens - 1 or (stop_check(dev, t) and done.all()):
            break
        logits, nxt = step(ids[-1], nxt), nxt + 1  # [B, V]
    return torch.stack(ids, 1), torch.stack(mask, 1).long(), ~done


def completion_logprobs(model, batch: Rollout, temperature: float = 1.0, return_logits=False):
    """log pi(o_t | q, o_<t) of each completion token: [B, T] (and the logits [B, T, V]).

    With ``batch.sampling_mask`` (see :func:`rollout`), log pi is renormalised over the
    tokens top-k/top-p allowed when the token was sampled; the returned logits stay unmasked.
    """
    logits = completion_logits(
        model, batch.prompt_ids, batch.prompt_mask, batch.completion_ids, batch.completion_mask
    )  # [B, T, V], each distinct prompt run once
    allowed = batch.sampling_mask  # [B, T, V] or None
    masked = logits if allowed is None else logits.masked_fill(~allowed, float("-inf"))
    logp = token_logprobs(masked, batch.completion_ids, temperature)  # [B, T]
    return (logp, logits) if return_logits else logp


def rollout(
    model,
    tokenizer,
    prompts: list[str],
    max_completion_length: int,
    *,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    generator: torch.Generator | None = None,
    keep_sampling_mask: bool = False,
    keep_entropy: bool = False,
) -> Rollout:
    """Sample one completion per prompt (repeat prompts for a group) and decode them.

    ``keep_sampling_mask``: store the top-k/top-p mask of every step in
    ``Rollout.sampling_mask`` ([B, T, V] bool), so training log-probs use the same
    truncation as sampling (off by default: it costs B x T x V booleans).
    ``keep_entropy``: store each token's sampling entropy in ``Rollout.sample_entropy``.
    """
    distinct = list(dict.fromkeys(prompts))  # a group's prompt is tokenized once
    enc = tokenizer(distinct, return_tensors="pt", padding=True, add_special_tokens=False)
    where = {p: i for i, p in enumerate(distinct)}
    dev = next(model.parameters()).device
    row = torch.tensor([where[p] for p in prompts], dtype=torch.long, device=dev)  # [B]
    enc = {k: v.to(dev)[row] for k, v in enc.items()}
    was_training = model.training
    model.eval()
    keep = [] if keep_sampling_mask and temperature > 0 else None
    logps = [] if temperature > 0 else None
    entropies = [] if keep_entropy and temperature > 0 else None
    ids, mask, truncated = sample(
        model,
        enc["input_ids"],
        enc["attention_mask"],
        max_completion_length,
        eos_id=tokenizer.eos_token_id,
        pad_id=tokenizer.pad_token_id,
        temperature=temperature,
        top_k=top_k,
        top_p=top_p,
        generator=generator,
        keep=keep,
        keep_logp=logps,
        keep_entropy=entropies,
    )
    model.train(was_training)
    texts = tokenizer.batch_decode(ids, skip_special_tokens=True)
    batch = Rollout(
        enc["input_ids"], enc["attention_mask"], ids, mask, truncated, list(prompts), texts
    )
    if keep:
        batch.sampling_mask = torch.stack(keep[: ids.shape[1]], 1)  # [B, T, V]
    if logps:
        batch.sample_logp = torch.stack(logps, 1)  # [B, T]
    if entropies:
        batch.sample_entropy = torch.stack(entropies, 1)  # [B, T]
    return batch


def tokenize_pairs(tokenizer, pairs: list[tuple[str, str]], device=None) -> Rollout:
    """(prompt, target) pairs as a rollout would have produced them: prompts left-padded,
    targets (+ eos) right-padded with their mask; built on the host, moved to ``device`` once."""
    enc = tokenizer(
        [p for p, _ in pairs], return_tensors="pt", padding=True, add_special_tokens=False
    )
    targets = [
        t + [tokenizer.eos_token_id]
        for t in tokenizer(  # one batched call: fast tokenizers
            [t for _, t in pairs], add_special_tokens=False
        )["input_ids"]
    ]
    T = max(map(len, targets))
    cpu = torch.device("cpu")  # filled row by row on the host, then copied once
    ids = torch.full((len(pairs), T), tokenizer.pad_token_id, device=cpu)  # [B, T]
    mask = torch.zeros(len(pairs), T, dtype=torch.long, device=cpu)  # [B, T]
    for i, t in enumerate(targets):
        ids[i, : len(t)], mask[i, : len(t)] = torch.tensor(t, device=cpu), 1
    return Rollout(
        enc["input_ids"].to(device),
        enc["attention_mask"].to(device),
        ids.to(device),
        mask.to(device),
        torch.zeros(len(pairs), dtype=torch.bool, device=device),
        [p for p, _ in pairs],
        [t for _, t in pairs],
    )
