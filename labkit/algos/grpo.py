"""The glass-box GRPO loop: sample, score, advantages, mu clipped updates, record everything.

One step (DeepSeekMath 2402.03300, Algorithm 1, with TRL's conventions), one
:class:`~labkit.models.rollout.Rollout` flowing through it:
  1. :meth:`GRPOTrainer.generate`: ``prompts_per_step`` prompts, G = ``num_generations``
     completions each;
  2. :meth:`GRPOTrainer.score` (``labkit.algos.scoring``): each reward function (TRL's
     signature), weighted sum, and the task's verifier (``correct``);
  3. :meth:`GRPOTrainer.advantages`: GRPO's group z-score A_i = (r_i - mean_group) /
     (std_group + 1e-4) (``scale_rewards``), or RLOO / REINFORCE baselines
     (``advantage_estimator``);
  4. ``num_iterations`` (mu) AdamW updates of ``labkit.core.policy_loss`` (clipped ratio to
     pi_old, + beta k3 to a frozen pi_ref when beta > 0);
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

import dataclasses
import time

import torch

from labkit.algos.base import StepRecord, Trainer
from labkit.algos.config import GRPOConfig
from labkit.algos.dapo import dynamic_sample
from labkit.algos.scoring import RewardScoring
from labkit.algos.zero_advantage import trained_rows, whole_batch_stats
from labkit.core import (
    entropy_bonus,
    entropy_from_logits,
    group_advantages,
    off_policy_sequence_mask,
    policy_loss,
    reinforce_advantages,
    rloo_advantages,
    truncated_is_weight,
)
from labkit.models.policy import frozen_copy, is_peft
from labkit.models.rollout import Rollout, completion_logprobs, rollout
from labkit.runs.records import (
    group_correct,
    inner_update_metrics,
    sample_rows,
    step_metrics,
    token_rows,
)
from labkit.tasks.base import max_completion_tokens


class GRPOTrainer(RewardScoring, Trainer):
    """``GRPOTrainer(model="tiny", reward_funcs=[...], task="addition", max_steps=100).train()``.

    ``model`` is a name for :func:`labkit.load_policy` or a model (then pass ``tokenizer``).
    Keyword overrides go to :class:`GRPOConfig`. ``run_name`` writes the log to
    ``runs/<run_name>/``; ``track_kl`` keeps pi_ref (and logs KL) even at beta = 0.
    """

    config_class = GRPOConfig
    algorithm = "grpo"

    def __init__(
        self,
        model="tiny",
        reward_funcs=("digit_partial",),
        task="addition",
        config: GRPOConfig | None = None,
        tokenizer=None,
        run_name: str | None = None,
        track_kl: bool = True,
        device=None,
        dtype=None,
        **overrides,
    ):
        self.reward_funcs, self.track_kl = reward_funcs, track_kl
        super().__init__(model, task, config, tokenizer, run_name, device, dtype, **overrides)

    def setup(self) -> None:
        self.setup_rewards()
        wants_ref = self.config.beta > 0 or self.track_kl
        # LoRA: pi_ref is the same model with its adapter disabled, not a second copy
        self.adapter_ref = wants_ref and is_peft(self.model)
        self.ref_model = frozen_copy(self.model) if wants_ref and not self.adapter_ref else None

    # -- configuration -------------------------------------------------------------------
    def run_config(self) -> dict:
        return {**super().run_config(), "track_kl": self.track_kl, **self.reward_run_config()}

    @classmethod
    def restore_kwargs(cls, run_dir, meta: dict) -> dict:
        return {
            **super().restore_kwargs(run_dir, meta),
            "reward_funcs": meta["reward_funcs"],
            "track_kl": meta.get("track_kl", True),
        }

    def check_update(self, new) -> None:
        if new.beta > 0 and not self.has_reference:
            raise ValueError(
                "beta > 0 needs a reference model: create the trainer with "
                "track_kl=True (the default) or beta > 0"
            )

    def update(self, reward_funcs=None, **changes) -> None:
        """Change hyperparameters (validated) or reward functions; applied between steps."""
        new = dataclasses.replace(self.config, **changes)  # __post_init__ refuses bad values
        self.check_update(new)
        funcs = reward_funcs or (
            [f for f, _ in self.reward_funcs] if "reward_weights" in changes else None
        )  # new weights only
        rewards = self._check_rewards(funcs, new.reward_weights) if funcs else None
        with self.lock:
            self.config = new
            self.apply_config()
            if rewards:
                self.reward_funcs = rewards
            if reward_funcs:
                self.close_reward_workers()
                changes["reward_funcs"] = reward_funcs
            self.log_event("update", changes)

    @property
    def has_reference(self) -> bool:
        """True when pi_ref log-probs are computed (a frozen copy or the disabled adapter)."""
        return self.ref_model is not None or self.adapter_ref

    def postfix(self, m: dict) -> dict:
        return {"reward": f"{m['reward/mean']:.3f}", "acc": f"{m['accuracy']:.2f}"}

    @property
    def max_len(self) -> int:
        """L_max: tokens sampled at most per completion (``max_completion_length``, or what the
        task needs). Dr. GRPO's constant divides by it (TRL: ``max_completion_length``), not by
        the batch's padded width, which would move with the longest completion of each batch."""
        return max_completion_tokens(self.task, self.config.max_completion_length)

    # -- generate -> score -> advantages ---------------------------------------------------
    def generate(self) -> Rollout:
        """Sample G completions for each of ``prompts_per_step`` training prompts."""
        c = self.config
        examples = [
            e
            for e in self.task.sample_prompts(c.prompts_per_step, self.rng)
            for _ in range(c.num_generations)
        ]
        r = rollout(
            self.model,
            self.tokenizer,
            [e.prompt for e in examples],
            self.max_len,
            c.temperature,
            c.top_k,
            c.top_p,
            self.generator,
            c.truncated_logprobs,
            keep_entropy=c.skip_zero_advantage,
        )
        r.examples = examples
        return r

    def collect(self) -> Rollout:
        """Generate and score; with ``dynamic_sampling`` only groups whose rewards differ
        (:func:`labkit.algos.dapo.dynamic_sample`)."""
        if self.config.dynamic_sampling:
            return dynamic_sample(self)
        return self.score(self.generate())

    def advantages(self, rewards: torch.Tensor) -> torch.Tensor:
        """[B] -> [B] by ``advantage_estimator`` (all from ``labkit.core.advantages``)."""
        c = self.config
        if c.advantage_estimator == "grpo":
            return group_advantages(rewards, c.num_generations, c.scale_rewards)
        if c.advantage_estimator == "rloo":
            return rloo_advantages(rewards, c.num_generations)
        baseline = "none" if c.advantage_estimator == "reinforce" else "batch_mean"
        return reinforce_advantages(rewards, c.num_generations, baseline)

    def prepare(self, r: Rollout) -> Rollout:
        """What the loss needs besides the policy: verifier, advantages, loss mask, pi_ref."""
        r.correct = group_correct(self.task, r.completions, r.examples, self.device)  # [B]
        observe = getattr(self.task, "observe", None)  # a pass-rate sampler (tasks/curriculum)
        if observe is not None:
            observe(r.examples, r.correct)
        r.advantages = self.advantages(r.rewards)  # [B]
        mask = r.completion_mask.float()  # [B, T]
        if self.config.mask_truncated_completions:  # DAPO's overlong filtering
            mask = mask * (~r.truncated).float().unsqueeze(1)
        r.loss_mask = mask
        self.reference_logprobs(r)
        return r

    @torch.no_grad()
    def reference_logprobs(self, r: Rollout) -> None:
        """pi_old (when mu > 1; else the first update's own log-probs) and pi_ref log-probs."""
        t = self.config.temperature or 1.0
        if self.config.num_iterations > 1:
            # no extra forward when sampling kept them; TIS needs the trainer's own pi_old
            r.old_logp = None if self.config.tis_cap is not None else self.sampling_logprobs(r)
            if r.old_logp is None:
                r.old_logp = completion_logprobs(self.model, r, t)
        if self.adapter_ref:
            with self.model.disable_adapter():
                r.ref_logp = completion_logprobs(self.model, r, t)
        elif self.ref_model is not None:
            r.ref_logp = completion_logprobs(self.ref_model, r, t)

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
    def loss(self, logp: torch.Tensor, r: Rollout):
        """The configured policy loss of ``logp`` [B, T] on rollout ``r``: (loss, stats)."""
        c = self.config
        adv, keep = r.advantages, None
        if c.off_policy_mask is not None:  # DeepSeek-V3.2: M_i multiplies the policy term only
            keep = off_policy_sequence_mask(logp, r.old_logp, adv, r.loss_mask, c.off_policy_mask)
            adv = adv * (keep.squeeze(-1) if adv.dim() == 1 else keep)  # [B] or [B, T]
        if c.tis_cap is not None:  # Yao et al. 2025: w_t multiplies the policy term only
            w, tis = truncated_is_weight(
                r.old_logp, r.sample_logp, r.loss_mask, c.tis_cap, c.tis_mode
            )  # [B, T] or [B, 1], detached, >= 0
            # w >= 0, so w * -min(rho A, clip(rho) A) = -min(rho wA, clip(rho) wA): TRL's product
            adv = (adv.unsqueeze(-1) if adv.dim() == 1 else adv) * w  # [B, 1] or [B, T]
            adv = adv.squeeze(-1) if adv.shape[-1] == 1 else adv  # [B] or [B, T]
        loss, stats = policy_loss(
            logp,
            r.old_logp,
            adv,
            r.loss_mask,
            loss_type=c.loss_type,
            epsilon=c.epsilon,
            epsilon_high=c.epsilon_high,
            importance_sampling_level=c.importance_sampling_level,
            max_completion_length=self.max_len,
            ref_logp=r.ref_logp,
            beta=c.beta,
            kl_estimator=c.kl_estimator,
        )
        if keep is not None:  # fraction of sequences masked (mean over inner updates: "mask/")
            stats["mask/off_policy_frac"] = 1 - keep.mean()
        if c.tis_cap is not None:
            stats.update(tis)
        return loss, stats

    def train_step(self) -> StepRecord:
        c, t0 = self.config, time.perf_counter()
        r = self.collect()
        t_rollout = time.perf_counter() - t0
        self.prepare(r)
        self.model.train()
        rows, scale = trained_rows(r, c, self.max_len)  # skip_zero_advantage: the rows that train
        t = r if rows is None else r.select(rows)
        updates = []
        tau = c.temperature or 1.0
        for it in range(c.num_iterations):
            logp, logits = completion_logprobs(self.model, t, tau, True)
            if t.old_logp is None:  # mu = 1: pi_old is the current policy, ratio 1
                t.old_logp = logp.detach()
            loss, stats = self.loss(logp, t)
            if rows is not None:  # the whole batch's loss and stats
                loss, stats = loss * scale, whole_batch_stats(stats, t, r, scale, c, kl=it == 0)
            H = None
            if c.entropy_coef:  # loss - c_H * mean entropy of pi_theta; H reused below
                H = entropy_from_logits(logits, tau)  # [B, T] with grad
                loss = loss + entropy_bonus(logits, t.loss_mask, c.entropy_coef, tau, H)
            grad_norm = self.optimizer_step(loss)
            updates.append(stats)
            if it == 0:
                first = {**stats, "loss": loss.detach(), "grad_norm": grad_norm}
                entropy = (
                    r.sample_entropy
                    if rows is not None
                    else H.detach()
                    if H is not None
                    else entropy_from_logits(logits.detach(), tau)
                )  # [B, T]
        # the per-token view shows the last update, where pi_theta has moved from pi_old
        last_logp, last = logp.detach(), updates[-1].get("per_token", {})
        G = c.num_generations
        m = {
            **step_metrics(r, first, entropy, r.completion_mask, G),
            **inner_update_metrics(updates),
            "time/rollout": t_rollout,
        }
        if c.skip_zero_advantage:
            m["train/rows_frac"] = 1.0 if rows is None else len(t) / len(r)
        return StepRecord(
            m,
            sample_rows(r, G),  # t's first rows are r's (trained_rows)
            token_rows(t, self.tokenizer, last_logp, last, c.diagnostics),
        )
