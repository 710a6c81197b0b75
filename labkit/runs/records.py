"""What a step records: metric keys, one row per sample, per-token diagnostics.

Metric keys (documented in README.md):
``reward/mean``, ``reward/std``, ``rewards/<fn>/mean``, ``accuracy`` (fraction the verifier
accepts), ``adv/mean_abs``, ``adv/frac_zero_std`` (groups whose rewards have zero spread, hence
zero advantage), ``kl/k1``, ``kl/k2``, ``kl/k3``, ``clip/ratio_low``, ``clip/ratio_high``,
``clip/region``, ``ratio/mean|min|max``, ``len/mean``, ``len/correct``, ``len/incorrect``,
``len/truncated_frac``, ``entropy``, ``grad_norm``, ``loss``, ``loss/policy``, ``loss/kl``,
``lr``, ``time/rollout``, ``time/step``; dynamic sampling adds ``sampling/rounds`` and
``sampling/kept_frac``, PPO (``labkit.algos.ppo``) ``vf/*``. README.md "Metric keys" is the table.
"""

from __future__ import annotations

import math

import torch

from labkit.core.logprobs import masked_mean


def _mean(values: list[float]) -> float:
    values = [v for v in values if not math.isnan(v)]
    return sum(values) / len(values) if values else math.nan


def step_metrics(step, batch, rewards, per_fn, adv, correct, stats, entropy, mask, G) -> dict:
    """The scalar summary of one step; ``stats`` from the policy loss of the first update."""
    lengths = batch.lengths.float()  # [B]
    groups = rewards.view(-1, G)  # [B/G, G]
    m = {"step": step, "reward/mean": rewards.mean().item(), "reward/std": rewards.std().item(),
         "accuracy": correct.float().mean().item(),
         "adv/mean_abs": adv.abs().mean().item(),
         "adv/frac_zero_std": (groups.std(1) == 0).float().mean().item(),
         "len/mean": lengths.mean().item(),
         "len/correct": lengths[correct].mean().item() if correct.any() else math.nan,
         "len/incorrect": lengths[~correct].mean().item() if (~correct).any() else math.nan,
         "len/truncated_frac": batch.truncated.float().mean().item(),
         "entropy": masked_mean(entropy, mask).item()}
    for name, values in per_fn.items():
        m[f"rewards/{name}/mean"] = _mean(values)
    for k, v in stats.items():
        if k != "per_token":
            m[k] = float(v)
    return m


def sample_rows(step, batch, examples, rewards, per_fn, adv, correct, G) -> list[dict]:
    """One row per completion: what a person reads when asking "what did the policy write?"."""
    rows, lengths = [], batch.lengths.tolist()
    for i, (prompt, completion) in enumerate(zip(batch.prompts, batch.completions)):
        row = {"step": step, "group": i // G, "prompt": prompt, "completion": completion,
               "answer": examples[i].answer, "reward": rewards[i].item(),
               "advantage": adv[i].item(), "length": int(lengths[i]),
               "truncated": bool(batch.truncated[i]), "correct": bool(correct[i])}
        row.update({f"rewards/{name}": values[i] for name, values in per_fn.items()})
        rows.append(row)
    return rows


def token_rows(step, batch, tokenizer, logp, adv, stats, n: int) -> list[dict]:
    """Per-token diagnostics of the first ``n`` completions (lists aligned with the tokens)."""
    per_token = stats.get("per_token", {})
    rows = []
    for i in range(min(n, batch.completion_ids.shape[0])):
        T = int(batch.lengths[i])
        ids = batch.completion_ids[i, :T].tolist()
        row = {"step": step, "sample": i, "prompt": batch.prompts[i],
               "tokens": [tokenizer.decode([t]) for t in ids], "advantage": adv[i].item(),
               "logp": logp[i, :T].tolist(), "old_logp": batch.old_logp[i, :T].tolist()}
        if batch.ref_logp is not None:
            row["ref_logp"] = batch.ref_logp[i, :T].tolist()
        for k, v in per_token.items():
            row[k] = v[i, :T].tolist()
        rows.append(row)
    return rows


def group_correct(task, completions: list[str], examples) -> torch.Tensor:
    """[B] bool: the task's verifier on each completion."""
    return torch.tensor([task.verify(c, e.answer) for c, e in zip(completions, examples)])
