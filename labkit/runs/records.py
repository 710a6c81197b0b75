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
``time/rollout``; dynamic sampling adds ``sampling/rounds`` and ``sampling/kept_frac``, PPO
(``labkit.algos.ppo``) ``vf/*``. README.md "Metric keys" is the table.
"""

from __future__ import annotations

import math

import torch

from labkit.core.logprobs import masked_mean


def _mean(values: list[float]) -> float:
    values = [v for v in values if not math.isnan(v)]
    return sum(values) / len(values) if values else math.nan


def step_metrics(r, stats: dict, entropy: torch.Tensor, entropy_mask: torch.Tensor,
                 G: int) -> dict:
    """The scalar summary of a scored rollout ``r``; ``stats`` from the policy loss of the
    first update, ``entropy`` [b, T] over ``entropy_mask``."""
    lengths = r.lengths.float()  # [B]
    groups = r.rewards.view(-1, G)  # [B/G, G]
    adv = r.advantages if r.advantages.dim() == 1 else r.advantages[:, 0]  # [B]
    correct = r.correct
    m = {"reward/mean": r.rewards.mean().item(), "reward/std": r.rewards.std().item(),
         "accuracy": correct.float().mean().item(),
         "adv/mean_abs": adv.abs().mean().item(),
         "adv/frac_zero_std": (groups.std(1) == 0).float().mean().item(),
         "len/mean": lengths.mean().item(),
         "len/correct": lengths[correct].mean().item() if correct.any() else math.nan,
         "len/incorrect": lengths[~correct].mean().item() if (~correct).any() else math.nan,
         "len/truncated_frac": r.truncated.float().mean().item(),
         "entropy": masked_mean(entropy, entropy_mask).item()}
    for name, values in r.rewards_per_func.items():
        m[f"rewards/{name}/mean"] = _mean(values)
    for k, v in stats.items():
        if k != "per_token":
            m[k] = float(v)
    return {**m, **r.info}


UPDATE_KEYS = ("clip/", "ratio/", "kl/old")
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
    m = {}
    for k in keys:
        values = [float(u[k]) for u in updates]
        m[k] = pick[k](values) if k in pick else sum(values) / len(values)
        m[f"{k}_last"] = values[-1]
    return m


def sample_rows(r, G: int) -> list[dict]:
    """One row per completion: what a person reads when asking "what did the policy write?"."""
    rows, lengths = [], r.lengths.tolist()
    adv = r.advantages if r.advantages.dim() == 1 else r.advantages[:, 0]  # [B]
    for i, (prompt, completion) in enumerate(zip(r.prompts, r.completions)):
        row = {"group": i // G, "prompt": prompt, "completion": completion,
               "answer": r.examples[i].answer, "reward": r.rewards[i].item(),
               "advantage": adv[i].item(), "length": int(lengths[i]),
               "truncated": bool(r.truncated[i]), "correct": bool(r.correct[i])}
        row.update({f"rewards/{name}": values[i] for name, values in r.rewards_per_func.items()})
        rows.append(row)
    return rows


def token_rows(r, tokenizer, logp: torch.Tensor, per_token: dict, n: int) -> list[dict]:
    """Per-token diagnostics of the first ``n`` completions (lists aligned with the tokens):
    ``logp`` [B, T] as the first update saw it, ``per_token`` [B, T] tensors by name."""
    adv = r.advantages if r.advantages.dim() == 1 else r.advantages[:, 0]  # [B]
    rows = []
    for i in range(min(n, len(r))):
        T = int(r.lengths[i])
        ids = r.completion_ids[i, :T].tolist()
        row = {"sample": i, "prompt": r.prompts[i],
               "tokens": [tokenizer.decode([t]) for t in ids], "advantage": adv[i].item(),
               "logp": logp[i, :T].tolist(), "old_logp": r.old_logp[i, :T].tolist()}
        if r.ref_logp is not None:
            row["ref_logp"] = r.ref_logp[i, :T].tolist()
        for k, v in per_token.items():
            row[k] = v[i, :T].tolist()
        rows.append(row)
    return rows


def group_correct(task, completions: list[str], examples, device=None) -> torch.Tensor:
    """[B] bool: the task's verifier on each completion (on ``device``)."""
    return torch.tensor([task.verify(c, e.answer) for c, e in zip(completions, examples)],
                        device=device)
