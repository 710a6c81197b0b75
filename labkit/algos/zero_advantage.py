"""Train only on the rows whose advantage is not 0 (``GRPOConfig.skip_zero_advantage``).

In the GRPO family the policy term of a token is -min(rho A, clip(rho) A) (or A times a
log-prob): with A = 0 it is 0 whatever rho, and so is its gradient. A group whose rewards all
agree has A = 0 on every row (``adv/frac_zero_std`` of them; most groups once the policy is
good), and a step spends a forward and a backward on them for nothing. Here those rows are left
out of the policy's forward, and the loss of the rows kept is multiplied by

    s = sum_{kept} w_{i,t}(whole batch) / sum_{kept} w_{i,t}(kept rows)

(``labkit.core.token_weights``: within one ``loss_type`` the two weightings are proportional),
so the loss and its gradient are the whole batch's. Only exact when nothing else in the loss
reaches the skipped rows: beta = 0 and entropy_coef = 0 (else every row trains).

What the step records stays about the whole batch where it can: the entropy is the sampler's
(pi_old, which the first update's pi_theta equals), KL to pi_ref is pi_old's, clip fractions
count every valid token (a token with A = 0 is never clipped: ``clipped_surrogate``); ratio and
kl/old describe the rows that trained. DAPO's dynamic sampling drops such groups and samples new
ones instead (2503.14476); this keeps the batch and only saves the work.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from labkit.core import kl_penalty, token_weights
from labkit.models.rollout import Rollout

CLIP_KEYS = ("clip/ratio_low", "clip/ratio_high", "clip/region", "clip/delta")


@dataclass
class TrainedRows:
    """The rows of rollout ``whole`` that train (``index`` [b] long, ascending; ``batch``:
    those rows) and ``scale`` = sum_kept w(whole) / sum_kept w(kept), which makes the kept
    rows' loss the whole batch's."""

    whole: Rollout
    index: torch.Tensor  # [b]
    batch: Rollout
    scale: torch.Tensor  # ()

    def whole_batch(self, loss: torch.Tensor, stats: dict, batch: Rollout, config):
        """The policy loss on the kept rows and its ``stats`` as the whole rollout's: the loss
        scaled; clip fractions over every valid token (sequence, at the sequence level)."""
        out = dict(stats)
        out["loss/policy"] = stats["loss/policy"] * self.scale
        by_sequence = config.importance_sampling_level == "sequence"
        count = (lambda m: (m.sum(-1) > 0).sum()) if by_sequence else (lambda m: m.sum())
        share = count(batch.loss_mask) / count(self.whole.loss_mask).clamp(min=1)  # kept / all
        for k in CLIP_KEYS + ("mask/off_policy_frac",):
            if k in out:
                out[k] = out[k] * share
        return loss * self.scale, out

    def sampler_kl(self, config) -> dict:
        """KL of the sampler's log-probs (pi_old, which the first update's pi_theta equals) to
        pi_ref over every row: the step's ``kl/*`` (empty without a reference)."""
        r = self.whole
        if r.ref_logp is None:
            return {}
        ones = torch.ones_like(r.sample_logp[:, :1])  # [B, 1]: pi_theta = pi_old
        _, info = kl_penalty(
            r.sample_logp, r.ref_logp, ones, r.loss_mask, estimator=config.kl_estimator
        )
        return {k: v for k, v in info.items() if k != "per_token"}


def trained_rows(r: Rollout, config, max_len: int) -> TrainedRows | None:
    """The rows of rollout ``r`` to train on, or None to train on all of it: nothing to skip;
    beta > 0 or entropy_coef > 0 (their terms reach every row); or top-k/top-p sampling,
    dynamic sampling, greedy decoding (the sampler's log-probs and entropies are then not
    pi_old's to record from). The first ``diagnostics`` rows always train (the per-token
    record reads them)."""
    unfiltered = config.top_k == 0 and config.top_p >= 1.0  # the sampler's pi is pi_old's
    exact = config.beta == 0 and config.entropy_coef == 0  # nothing else reaches a row with A = 0
    if (
        not config.skip_zero_advantage
        or not (unfiltered and exact)
        or r.sample_logp is None
        or r.sample_entropy is None
    ):
        return None
    adv = r.advantages if r.advantages.dim() == 2 else r.advantages[:, None]  # [B, 1] or [B, T]
    live = ((adv * r.loss_mask) != 0).any(-1)  # [B]
    live[: max(1, config.diagnostics)] = True
    rows = live.nonzero().squeeze(-1)  # [b] ascending: one host sync
    if rows.shape[0] == live.shape[0]:
        return None
    w_all = token_weights(r.loss_mask, config.loss_type, max_len)  # [B, T]
    w_kept = token_weights(r.loss_mask[rows], config.loss_type, max_len)  # [b, T]
    scale = w_all[rows].sum() / w_kept.sum().clamp(min=torch.finfo(w_kept.dtype).tiny)
    return TrainedRows(r, rows, r.select(rows), scale)
