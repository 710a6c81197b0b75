"""Multi-turn episodes: policy tokens and environment tokens interleaved in one completion.

An episode is the completion of a :class:`~labkit.models.rollout.Rollout` whose tokens come
from two writers: the policy samples a turn until end-of-sequence or the protocol's call token
(``=`` in ``[37*48=``); the environment runs the tool and its answer (``1776]``) is appended as
tokens the policy did not write; the policy samples its next turn on top of all of it. The
episode ends at end-of-sequence, at ``max_turns`` policy turns or at ``max_completion_length``
tokens (then ``truncated`` and ``cut`` say which limit).

``env_mask`` [B, T] is 1 where the policy wrote the token and 0 where the environment did; the
loss counts ``completion_mask * env_mask`` (TRL 1.16: ``completion_mask * tool_mask``), so the
environment's tokens are context for the policy's next turn and never a target.
Each turn re-encodes the episode so far as the prompt of the next ``sample`` call (a KV cache
within a turn, none across turns: the episodes here are a few dozen tokens).
The environment and protocol are duck-typed (``labkit.envs``): ``env.reset(**columns)``,
``protocol.run(env, turn_text, timeout) -> ToolResult | None``.
"""

from __future__ import annotations

import torch

from labkit.models.rollout import Rollout, sample


class _Episode:
    """One row's episode as it grows: token ids, who wrote each, turns, calls, faults."""

    def __init__(self, prompt_ids: list[int]):
        self.prompt_ids, self.ids, self.env = prompt_ids, [], []
        self.turn_ends, self.calls, self.failures = [], 0, []
        self.done, self.cut = False, ""

    def add(self, ids: list[int], by_policy: bool) -> None:
        self.ids += ids
        self.env += [int(by_policy)] * len(ids)


def _pad_rows(rows: list[list[int]], pad: int, left: bool, device):
    """Lists of ids -> (ids [B, W], mask [B, W]) padded on the left or the right."""
    W = max(1, max(map(len, rows)))
    cpu = torch.device("cpu")  # filled on the host, copied to ``device`` once
    ids = torch.full((len(rows), W), pad, dtype=torch.long, device=cpu)  # [B, W]
    mask = torch.zeros(len(rows), W, dtype=torch.long, device=cpu)  # [B, W]
    for i, r in enumerate(rows):
        if r:
            sl = slice(W - len(r), W) if left else slice(0, len(r))
            ids[i, sl], mask[i, sl] = torch.tensor(r, device=cpu), 1
    return ids.to(device), mask.to(device)


def _policy_turn(
    model, tokenizer, eps: list[_Episode], budget: int, stop_ids: list[int], sampling: dict, dev
) -> list[list[int]]:
    """Sample one turn for each episode in ``eps``: its new ids (stop token included)."""
    ids, mask = _pad_rows([e.prompt_ids + e.ids for e in eps], tokenizer.pad_token_id, True, dev)
    new, new_mask, _ = sample(
        model,
        ids,
        mask,
        budget,
        eos_id=tokenizer.eos_token_id,
        pad_id=tokenizer.pad_token_id,
        stop_ids=stop_ids,
        **sampling,
    )  # [b, t]
    return [row[:n] for row, n in zip(new.tolist(), new_mask.sum(-1).tolist())]


def _after_turn(
    e: _Episode, new: list[int], env, tokenizer, protocol, L: int, tool_timeout: float
) -> None:
    """Append the policy's turn, run its tool call, append the result (or end the episode)."""
    room = L - len(e.ids)
    e.add(new[:room], True)
    e.turn_ends.append(len(e.ids))
    if new[:room] and new[:room][-1] == tokenizer.eos_token_id:
        e.done = True
        return
    if len(new) >= room:  # no stop token within the token budget
        e.done, e.cut = True, "tokens"
        return
    result = protocol.run(env, tokenizer.decode(new, skip_special_tokens=True), tool_timeout)
    if result is None:  # the call token without a call: the turn ends, nothing is appended
        return
    e.calls += 1
    if result.failure:
        e.failures.append(result.failure)
    obs = tokenizer(result.text, add_special_tokens=False)["input_ids"]
    e.add(obs[: L - len(e.ids)], False)
    if len(e.ids) >= L:  # the tool's answer filled the budget: no room left to answer
        e.done, e.cut = True, "tokens"


@torch.no_grad()
def episodes(
    model,
    tokenizer,
    prompts: list[str],
    envs: list,
    *,
    columns: list[dict],
    protocol,
    max_completion_length: int,
    max_turns: int = 4,
    temperature: float = 1.0,
    top_k: int = 0,
    top_p: float = 1.0,
    generator: torch.Generator | None = None,
    tool_timeout: float = 1.0,
) -> Rollout:
    """Run one episode per prompt (``envs[i]`` reset with ``columns[i]``): a :class:`Rollout`
    whose completion is the whole episode, with ``env_mask``, ``turn_ends``, ``tool_calls``,
    ``tool_failures`` and ``cut`` filled.

    Policy turns t = 1..max_turns; turn t samples o_t ~ pi(. | q, o_1, e_1, ..., e_{t-1}) and
    the environment answers e_t = env(o_t); the completion is o_1 e_1 o_2 e_2 ... o_n.
    """
    dev = next(model.parameters()).device
    obs = [env.reset(**cols) for env, cols in zip(envs, columns)]
    prompts = [p + (o or "") for p, o in zip(prompts, obs)]  # TRL appends reset()'s string
    eps = [_Episode(ids) for ids in tokenizer(prompts, add_special_tokens=False)["input_ids"]]
    stop_ids = tokenizer(protocol.call_end, add_special_tokens=False)["input_ids"]
    sampling = {"temperature": temperature, "top_k": top_k, "top_p": top_p, "generator": generator}
    L = max_completion_length
    was_training = model.training
    model.eval()
    for _ in range(max_turns):
        live = [i for i, e in enumerate(eps) if not e.done]
        if not live:
            break
        budget = max(L - len(eps[i].ids) for i in live)
        turns = _policy_turn(
            model, tokenizer, [eps[i] for i in live], budget, stop_ids, sampling, dev
        )
        for i, new in zip(live, turns):
            _after_turn(eps[i], new, envs[i], tokenizer, protocol, L, tool_timeout)
    model.train(was_training)
    for e in eps:
        if not e.done:
            e.cut = "turns"
    return _record(eps, prompts, tokenizer, dev)


def _record(eps: list[_Episode], prompts: list[str], tokenizer, dev) -> Rollout:
    pad = tokenizer.pad_token_id
    prompt_ids, prompt_mask = _pad_rows([e.prompt_ids for e in eps], pad, True, dev)  # [B, P]
    ids, mask = _pad_rows([e.ids for e in eps], pad, False, dev)  # [B, T]
    env_mask, _ = _pad_rows([e.env for e in eps], 0, False, dev)  # [B, T] 1 = policy
    cut = [e.cut for e in eps]
    truncated = torch.tensor([bool(c) for c in cut], device=dev)  # [B]
    texts = tokenizer.batch_decode(ids, skip_special_tokens=True)
    r = Rollout(prompt_ids, prompt_mask, ids, mask, truncated, prompts, texts)
    r.env_mask = env_mask
    r.turn_ends = [e.turn_ends for e in eps]
    r.tool_calls = torch.tensor([e.calls for e in eps], device=dev)  # [B]
    r.tool_failures = [e.failures for e in eps]
    r.cut = cut
    return r
