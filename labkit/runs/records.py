"""What a step records: metric keys, one row per sample, per-token diagnostics.

Each function reads a :class:`labkit.models.rollout.Rollout` (duck-typed: runs/ imports no
model code); the trainer's base adds ``step``, ``lr`` and ``time/step``.
Metric keys (documented in README.md):
``reward/mean``, ``reward/std``, ``rewards/<fn>/mean``, ``accuracy`` (fraction the verifier
accepts), ``adv/mean_abs``, ``adv/frac_zero_std`` (groups whose rewards have zero spread, hence
zero advantage), ``kl/k1``, ``kl/k2``, ``kl/k3``, ``clip/ratio_low``, ``clip/ratio_high``,
``clip/region``, ``ratio/mean|min|max``, ``kl/old`` (each over the step's inner updates,
and ``<key>_last`` for the last update: :func:`inner_update_metrics`), ``len/mean``, ``len/correct``, ``len/incorrect``,
``len/truncated_frac``, ``entropy``, ``grad_norm``, ``loss``, ``loss/policy``, ``loss/kl``,
``time/rollout``; ``off_policy_mask`` adds ``mask/off_policy_frac`` (over the inner updates
too); ``tis_cap`` adds ``tis/weight_mean|min|max``, ``tis/clipped_frac``, ``tis/logp_gap``
(``labkit.core.tis``); ``skip_zero_advantage`` adds ``train/rows_frac``
(``labkit.algos.zero_advantage``); dynamic sampling adds ``sampling/rounds`` and ``sampling/kept_frac``, PPO
(``labkit.algos.ppo``) ``vf/*``; ``sync_ref_model`` adds ``ref/refreshes`` (every trainer) and
``kl_init/k1``, ``kl_init/k3`` (GRPO, ``labkit.algos.reference``). README.md "Metric keys" is the
table.
"""

from __future__ import annotations

import math

import torch

from labkit.core.logprobs import masked_mean
from labkit.core.numerics import float_dtype


def _mean(values: list[float]) -> float:
    values = [v for v in values if not math.isnan(v)]
    return sum(values) / len(values) if values else math.nan


def to_host(values: dict) -> dict:
    """Scalars (0-dim tensors or numbers) by name -> floats, in ONE device-to-host copy."""
    tensors = {k: v.detach().reshape(()) for k, v in values.items() if isinstance(v, torch.Tensor)}
    out = {k: float(v) for k, v in values.items() if k not in tensors}  # numbers as they are
    if tensors:
        dtype = float_dtype(*tensors.values())  # float32, or float64 when one is
        flat = torch.stack([v.to(dtype) for v in tensors.values()]).tolist()  # one sync
        out.update(zip(tensors, flat))
    return {k: out[k] for k in values}


def step_metrics(
    r,
    stats: dict,
    updates: list[dict],
    *,
    entropy: torch.Tensor,
    entropy_mask: torch.Tensor,
    G: int,
) -> dict:
    """A step's metrics, built here once: the scalar summary of a scored rollout ``r``;
    ``stats`` from the policy loss of the first update (with its loss and grad norm),
    ``updates`` the stats of every inner update (:func:`inner_update_metrics`), ``entropy``
    [b, T] over ``entropy_mask``, and what the rollout's collection recorded (``r.info``).
    Two host syncs for all of it."""
    lengths = r.lengths.float()  # [B]
    groups = r.rewards.view(-1, G)  # [B/G, G]
    adv = r.advantages if r.advantages.dim() == 1 else r.advantages[:, 0]  # [B]
    correct = _correct(r, lengths)  # [B], NaN without a verifier: no accuracy
    m = {
        "reward/mean": r.rewards.mean(),
        "reward/std": r.rewards.std(),
        "accuracy": correct.mean(),
        "adv/mean_abs": adv.abs().mean(),
        "adv/frac_zero_std": (groups.std(1) == 0).float().mean(),
        "len/mean": lengths.mean(),
        "len/correct": (lengths * correct).sum() / correct.sum(),  # NaN when none is correct
        "len/incorrect": (lengths * (1 - correct)).sum() / (1 - correct).sum(),
        "len/truncated_frac": r.truncated.float().mean(),
        "entropy": masked_mean(entropy, entropy_mask),
        **{k: v for k, v in stats.items() if k != "per_token"},
    }
    m = to_host(m)
    for name, values in r.rewards_per_func.items():
        m[f"rewards/{name}/mean"] = _mean(values)
    return {**m, **r.info, **inner_update_metrics(updates)}


UPDATE_KEYS = ("clip/", "ratio/", "kl/old", "mask/", "vf/clipfrac")  # vf/clipfrac: PPO's value clip
"""Stats that change from one inner update to the next (the ratio to pi_old and what it clips)."""


def inner_update_metrics(updates: list[dict]) -> dict:
    """Clip fractions, ratio and approx-KL(pi_old || pi_theta) over a step's inner updates.

    ``updates`` holds the stats of each of the step's updates in order (mu for GRPO, epochs x
    minibatches for PPO). The first update sees pi_theta = pi_old (ratio 1, nothing clipped) by
    construction, so the first alone shows no clipping: each key is the mean over updates
    (``ratio/min``: the min, ``ratio/max``: the max), and ``<key>_last`` is the last update's.

    >>> up = [{"clip/region": 0.0, "ratio/max": 1.0}, {"clip/region": 0.5, "ratio/max": 1.4}]
    >>> inner_update_metrics(up)
    {'clip/region': 0.25, 'clip/region_last': 0.5, 'ratio/max': 1.4, 'ratio/max_last': 1.4}
    """
    keys = [k for k in updates[0] if k.startswith(UPDATE_KEYS)]
    pick = {"ratio/min": min, "ratio/max": max}
    host = to_host({(k, i): u[k] for k in keys for i, u in enumerate(updates)})  # one sync
    m = {}
    for k in keys:
        values = [host[(k, i)] for i in range(len(updates))]
        m[k] = pick[k](values) if k in pick else sum(values) / len(values)
        m[f"{k}_last"] = values[-1]
    return m


def _correct(r, like: torch.Tensor) -> torch.Tensor:
    """[B] float: the verifier's 1/0, or NaN for every row when the task has no verifier."""
    return r.correct.float() if r.correct is not None else torch.full_like(like.float(), math.nan)


def sample_rows(r, G: int) -> list[dict]:
    """One row per completion: what a person reads when asking "what did the policy write?"."""
    adv = r.advantages if r.advantages.dim() == 1 else r.advantages[:, 0]  # [B]
    cols = torch.stack(
        [r.rewards.float(), adv.float(), r.lengths.float(), r.truncated.float(), _correct(r, adv)]
    )  # [5, B]
    reward, advantage, lengths, truncated, correct = cols.tolist()  # one sync
    rows = []
    for i, (prompt, completion) in enumerate(zip(r.prompts, r.completions)):
        row = {
            "group": i // G,
            "prompt": prompt,
            "completion": completion,
            "answer": r.examples[i].answer,
            "reward": reward[i],
            "advantage": advantage[i],
            "length": int(lengths[i]),
            "truncated": bool(truncated[i]),
            "correct": None if r.correct is None else bool(correct[i]),
        }
        row.update({f"rewards/{name}": values[i] for name, values in r.rewards_per_func.items()})
        row.update({name: values[i] for name, values in r.reward_logs.items()})  # log_extra's
        rows.append(row)
    return rows


def token_rows(r, tokenizer, logp: torch.Tensor, per_token: dict, n: int) -> list[dict]:
    """Per-token diagnostics of the first ``n`` completions (lists aligned with the tokens):
    ``logp`` [B, T] as the first update saw it, ``per_token`` [B, T] tensors by name."""
    n = min(n, len(r))
    if n == 0:
        return []
    adv = r.advantages if r.advantages.dim() == 1 else r.advantages[:, 0]  # [B]
    named = {
        "logp": logp,
        "old_logp": r.old_logp,
        **({} if r.ref_logp is None else {"ref_logp": r.ref_logp}),
        **per_token,
    }
    W = r.completion_ids.shape[1]
    head = torch.stack(
        [
            r.completion_ids[:n].double(),
            r.lengths[:n, None].double().expand(n, W),
            adv[:n, None].double().expand(n, W),
            *[v[:n].detach().double() for v in named.values()],
        ]
    )  # [K, n, T]
    ids, lengths, advantage, *values = head.tolist()  # one sync for every row
    rows = []
    for i in range(n):
        T = int(lengths[i][0])
        row = {
            "sample": i,
            "prompt": r.prompts[i],
            "tokens": [tokenizer.decode([int(t)]) for t in ids[i][:T]],
            "advantage": advantage[i][0],
        }
        row.update({k: _typed(v[i][:T], named[k].dtype) for k, v in zip(named, values)})
        rows.append(row)
    return rows


def _typed(values: list[float], dtype: torch.dtype) -> list:
    """Values read back as float64 in their tensor's own Python type (bool, int or float)."""
    if dtype == torch.bool:
        return [bool(x) for x in values]
    return [int(x) for x in values] if not dtype.is_floating_point else values


def group_correct(task, completions: list[str], examples, device=None) -> torch.Tensor:
    """[B] bool: the task's verifier on each completion (on ``device``)."""
    return torch.tensor(
        [task.verify(c, e.answer) for c, e in zip(completions, examples)], device=device
    )
