"""The glass-box GRPO loop: sample, score, advantages, mu clipped updates, record everything.

One step (DeepSeekMath 2402.03300, Algorithm 1, with TRL's conventions), one
:class:`~labkit.models.rollout.Rollout` flowing through it:
  1. :meth:`GRPOTrainer.generate`: ``prompts_per_step`` prompts, G = ``num_generations``
     completions each;
  2. :meth:`GRPOTrainer.score` (``labkit.algos.scoring``): each reward function (TRL's
     signature), weighted sum; then the task's verifier (``correct``);
  3. :meth:`GRPOTrainer.advantages`: GRPO's group z-score A_i = (r_i - mean_group) /
     (std_group + 1e-4) (``scale_rewards``), or RLOO / REINFORCE baselines
     (``advantage_estimator``);
  4. ``num_iterations`` (mu) AdamW updates of ``labkit.core.policy_loss`` (clipped ratio to
     pi_old, + beta k3 to a frozen pi_ref when beta > 0; ``sync_ref_model`` refreshes pi_ref,
     TR-DPO, ``labkit.algos.reference``);
  5. the step's record: metrics (clip fractions, ratio and approx-KL to pi_old over every inner
     update and at the last; loss, grad norm and entropy of the first), every sample, per-token
     diagnostics as the last update saw them (``labkit.runs.records``).
DAPO options: ``dynamic_sampling`` (keep only groups with reward spread, sample more),
``mask_truncated_completions`` (overlong filtering), ``overlong_buffer`` (soft punishment);
GSPO is ``importance_sampling_level="sequence"``, CISPO ``loss_type="cispo"``; ``tis_cap``
weights the policy term by truncated importance sampling of the sampler/trainer mismatch
(``labkit.core.tis``; pi_old is then the trainer's forward, not the sampler's log-probs).
Departures from TRL: prompts are sampled with replacement from the task's train split; a frozen
reference is also kept at beta = 0 when ``track_kl`` (KL is then logged, not optimised).
"""

from __future__ import annotations

import time

import torch

from labkit.algos.base import StepRecord
from labkit.algos.config import GRPOConfig
from labkit.algos.sampling import SamplingTrainer
from labkit.algos.zero_advantage import TrainedRows, trained_rows
from labkit.core import (
    entropy_bonus,
    entropy_from_logits,
    group_advantages,
    kl_k1,
    kl_k3,
    masked_mean,
    off_policy_sequence_mask,
    policy_loss,
    reinforce_advantages,
    rloo_advantages,
    truncated_is_weight,
)
from labkit.models.rollout import Rollout, completion_logprobs
from labkit.runs.records import sample_rows, step_metrics, to_host, token_rows


class GRPOTrainer(SamplingTrainer):
    """``GRPOTrainer(model="tiny", reward_funcs=[...], task="addition", max_steps=100).train()``.

    ``model`` is a name for :func:`labkit.load_policy` or a model (then pass ``tokenizer``).
    Keyword overrides go to :class:`GRPOConfig`. ``run_name`` writes the log to
    ``runs/<run_name>/``; ``track_kl`` keeps pi_ref (and logs KL) even at beta = 0.
    """

    config_class = GRPOConfig
    algorithm = "grpo"
    keeps_initial_policy = True  # sync_ref_model: KL to pi_0 stays measured (kl_init/*)

    # -- advantages and what the loss needs ------------------------------------------------
    def advantages(self, rewards: torch.Tensor) -> torch.Tensor:
        """[B] -> [B] by ``advantage_estimator`` (all from ``labkit.core.advantages``)."""
        c = self.config
        if c.advantage_estimator == "grpo":  # DeepSeekMath (2402.03300) sec. 4.1.2
            return group_advantages(rewards, c.num_generations, c.scale_rewards)
        if c.advantage_estimator == "rloo":  # Ahmadian et al. (2402.14740)
            return rloo_advantages(rewards, c.num_generations)
        baseline = "none" if c.advantage_estimator == "reinforce" else "batch_mean"
        return reinforce_advantages(rewards, c.num_generations, baseline)

    def prepare(self, r: Rollout) -> Rollout:
        """What the loss needs besides the policy: verifier, advantages, loss mask, pi_old and
        pi_ref log-probs."""
        self.verify(r)
        r.advantages = self.advantages(r.rewards)  # [B]
        r.loss_mask = self.loss_mask(r)  # [B, T]
        self.old_logprobs(r)
        self.reference_logprobs(r)
        return r

    @torch.no_grad()
    def old_logprobs(self, r: Rollout) -> None:
        """``r.old_logp`` [B, T] when mu > 1: the sampler's log-probs when they are pi_old's
        (:meth:`sampling_logprobs`), else a no-grad forward. With mu = 1 it stays None: the
        first update's own log-probs are pi_old (ratio 1)."""
        if self.config.num_iterations > 1:
            # TIS compares the sampler with the trainer: pi_old must be the trainer's forward
            r.old_logp = None if self.config.tis_cap is not None else self.sampling_logprobs(r)
            if r.old_logp is None:
                r.old_logp = completion_logprobs(self.model, r, self.config.temperature or 1.0)

    def sampling_logprobs(self, r: Rollout):
        """log pi_old [B, T] as the sampler computed it, when it is the distribution the loss
        uses (no top-k/top-p, or their mask kept) and in fp32: pi_old is the policy that
        sampled, so the no-grad forward for it is skipped. None otherwise (e.g. after dynamic
        sampling): under bf16/fp16 autocast cached decoding rounds differently from the
        trainer's forward (``labkit.experiments.precision``), so pi_old is the trainer's own,
        as in TRL, and the ratio starts at 1."""
        c = self.config
        same = (c.top_k == 0 and c.top_p >= 1.0) or r.sampling_mask is not None
        same = same and self.precision == "fp32"
        return r.sample_logp if same and r.sample_logp is not None else None

    # -- the step --------------------------------------------------------------------------
    def loss(self, logp: torch.Tensor, batch: Rollout):
        """The configured policy loss of ``logp`` [B, T] on ``batch``: (loss, stats)."""
        c = self.config
        adv, keep = batch.advantages, None
        if c.off_policy_mask is not None:  # DeepSeek-V3.2 (2512.02556): M_i, policy term only
            keep = off_policy_sequence_mask(
                logp, batch.old_logp, adv, batch.loss_mask, c.off_policy_mask
            )
            adv = adv * (keep.squeeze(-1) if adv.dim() == 1 else keep)  # [B] or [B, T]
        if c.tis_cap is not None:  # Yao et al. 2025: w_t multiplies the policy term only
            w, tis = truncated_is_weight(
                batch.old_logp, batch.sample_logp, batch.loss_mask, c.tis_cap, c.tis_mode
            )  # [B, T] or [B, 1], detached, >= 0
            # w >= 0, so w * -min(rho A, clip(rho) A) = -min(rho wA, clip(rho) wA): TRL's product
            adv = (adv.unsqueeze(-1) if adv.dim() == 1 else adv) * w  # [B, 1] or [B, T]
            adv = adv.squeeze(-1) if adv.shape[-1] == 1 else adv  # [B] or [B, T]
        loss, stats = policy_loss(
            logp,
            batch.old_logp,
            adv,
            batch.loss_mask,
            loss_type=c.loss_type,
            epsilon=c.epsilon,
            epsilon_high=c.epsilon_high,
            importance_sampling_level=c.importance_sampling_level,
            max_completion_length=self.max_len,
            ref_logp=batch.ref_logp,
            beta=c.beta,
            kl_estimator=c.kl_estimator,
        )
        if keep is not None:  # fraction of sequences masked (mean over inner updates: "mask/")
            stats["mask/off_policy_frac"] = 1 - keep.mean()
        if c.tis_cap is not None:
            stats.update(tis)
        return loss, stats

    def update_loss(self, batch: Rollout, rows: TrainedRows | None, first: bool):
        """One inner update's loss on ``batch`` (the rows that train): (loss, stats, logp,
        logits, H). ``stats`` describe the whole rollout (``rows.whole_batch``); H [b, T] is
        pi_theta's entropy when the entropy bonus needed it (None otherwise)."""
        c, tau = self.config, self.config.temperature or 1.0
        logp, logits = completion_logprobs(self.model, batch, tau, True)  # [b, T], [b, T, V]
        if batch.old_logp is None:  # mu = 1: pi_old is the current policy, ratio 1
            batch.old_logp = logp.detach()
        loss, stats = self.loss(logp, batch)
        if rows is not None:  # skip_zero_advantage: the whole batch's loss and stats
            loss, stats = rows.whole_batch(loss, stats, batch, c)
            if first:  # the record's KL to pi_ref: the sampler's, over every row
                stats.update(rows.sampler_kl(c))
        H = None
        if c.entropy_coef:  # loss - c_H * mean entropy of pi_theta; H reused by the record
            H = entropy_from_logits(logits, tau)  # [b, T] with grad
            loss = loss + entropy_bonus(logits, batch.loss_mask, c.entropy_coef, tau, H)
        return loss, stats, logp, logits, H

    def train_step(self) -> StepRecord:
        c, t0 = self.config, time.perf_counter()
        r = self.collect()
        t_rollout = time.perf_counter() - t0
        self.prepare(r)
        self.model.train()
        rows = trained_rows(r, c, self.max_len) if c.skip_zero_advantage else None  # [b] or all
        batch = r if rows is None else rows.batch
        updates = []
        for it in range(c.num_iterations):
            loss, stats, logp, logits, H = self.update_loss(batch, rows, first=it == 0)
            grad_norm = self.optimizer_step(loss)
            updates.append(stats)
            if it == 0:
                first = {**stats, "loss": loss.detach(), "grad_norm": grad_norm}
                entropy = self.record_entropy(r, rows, logits, H)  # [B, T]
        m = step_metrics(
            r, first, updates, entropy=entropy, entropy_mask=r.completion_mask, G=c.num_generations
        )
        m["time/rollout"] = t_rollout
        m.update(self.initial_kl(r, m))
        if c.skip_zero_advantage:
            m["train/rows_frac"] = 1.0 if rows is None else len(batch) / len(r)
        # the per-token view shows the last update, where pi_theta has moved from pi_old
        return StepRecord(
            m,
            sample_rows(r, c.num_generations),
            token_rows(  # the trained batch's first rows are r's (trained_rows keeps them)
                batch,
                self.tokenizer,
                logp.detach(),
                updates[-1].get("per_token", {}),
                c.diagnostics,
            ),
        )

    @torch.no_grad()
    def initial_kl(self, r: Rollout, m: dict) -> dict:
        """With ``sync_ref_model``: ``kl_init/k1``, ``kl_init/k3``, KL(pi_old || pi_0) per token
        over the loss mask, to the policy the run started from (``kl/*`` is to pi_ref, which a
        refresh moves). Until the first refresh pi_ref is pi_0: they are ``kl/k1``, ``kl/k3``."""
        if not self.config.sync_ref_model:
            return {}
        init = self.ref_sync.init_model
        if init is None:  # pi_ref is still pi_0: no second forward
            return {f"kl_init/{k}": m[f"kl/{k}"] for k in ("k1", "k3") if f"kl/{k}" in m}
        logp = r.old_logp if r.old_logp is not None else r.sample_logp  # [B, T] pi_old
        if logp is None:
            return {}
        init_logp = completion_logprobs(init, r, self.config.temperature or 1.0)  # [B, T]
        return to_host(
            {
                "kl_init/k1": masked_mean(kl_k1(logp, init_logp), r.loss_mask),
                "kl_init/k3": masked_mean(kl_k3(logp, init_logp), r.loss_mask),
            }
        )

    def record_entropy(self, r: Rollout, rows, logits, H) -> torch.Tensor:
        """The entropy [B, T] the step records: the sampler's when only some rows trained
        (pi_old, which the first update's pi_theta equals), else the first update's."""
        if rows is not None:
            return r.sample_entropy
        if H is not None:
            return H.detach()
        return entropy_from_logits(logits.detach(), self.config.temperature or 1.0)
