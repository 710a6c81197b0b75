"""PPO for language models with a value head (InstructGPT, 2203.02155).

One step:
  1. sample completions (as GRPO; ``num_generations`` may be 1) and score them: r(x, y);
  2. one no-grad pass for pi_old's log-probs and the critic's values V(s_t), one for pi_ref;
  3. per-token reward: r_t = -beta KL_t (estimator ``kl_estimator``, k1 by default) and + r(x, y)
     on the last token (``kl_in_reward``; otherwise beta KL goes into the loss as in GRPO);
  4. GAE: A_t = sum_l (gamma lam)^l delta_{t+l}, returns R_t = A_t + V(s_t); A whitened;
  5. ``ppo_epochs`` epochs of ``num_mini_batches`` minibatches of
     L = policy_loss (clipped ratio, per token A_t) + vf_coef * value_loss (clipped to V_old);
  6. record: loss, grad norm, entropy of the first minibatch; clip fractions, ratio and
     approx-KL to pi_old over every minibatch update (and the last); per-token rows of the first
     ``diagnostics`` completions as their minibatch of the last epoch saw them.
Before step 1, ``value_warmup_steps`` rounds of steps 1-4 fit the critic alone
(:meth:`PPOTrainer.warm_up_critic`: VC-PPO's value pretraining, Yuan et al. 2025, arXiv
2503.01491, sec. 4.1; critic initialisation in Zheng et al. 2023, arXiv 2307.04964).
Sources: Schulman et al. 2017 (1707.06347), Ouyang et al. 2022 (2203.02155), TRL's former
PPOTrainer, cleanrl ppo.py. Departures: the value head is a linear layer on the policy's last
hidden state (shared trunk, as TRL's AutoModelForCausalLMWithValueHead), initialised to 0;
one optimizer, the head with its own learning rate (``value_learning_rate``); the warm-up fits
the head only (the trunk is the policy's, so a critic-only step cannot move it).
"""

from __future__ import annotations

import time

import torch

from labkit.algos.base import StepRecord
from labkit.algos.config import PPOConfig
from labkit.algos.sampling import SamplingTrainer
from labkit.core import entropy_from_logits, gae, kl_estimate, policy_loss, value_loss, whiten
from labkit.core.logprobs import entropy_bonus, token_logprobs
from labkit.models.prefix import completion_outputs
from labkit.models.rollout import Rollout
from labkit.runs.records import sample_rows, step_metrics, token_rows


class PPOTrainer(SamplingTrainer):
    """``PPOTrainer(model="tiny", reward_funcs=[...], max_steps=50).train()``: PPO with a critic.

    Sampling, scoring and pi_ref as :class:`~labkit.algos.grpo.GRPOTrainer` (both on
    :class:`~labkit.algos.sampling.SamplingTrainer`), the same API (pause, update, from_run,
    fork, the run log); the value head is ``self.value_head`` and is saved in checkpoints.
    """

    config_class = PPOConfig
    algorithm = "ppo"
    token_score = None
    """A hook: ``fn(rollout) -> [B, T]`` per-token scores added to r_t (e.g. a process reward on
    each step's last token, ``labkit.algos.process``); None: off."""

    def setup(self) -> None:
        super().setup()
        hidden = self.model.config.hidden_size
        self.value_head = torch.nn.Linear(hidden, 1, device=self.device)
        torch.nn.init.zeros_(self.value_head.weight)
        torch.nn.init.zeros_(self.value_head.bias)

    def param_groups(self) -> list[list]:
        return super().param_groups() + [list(self.value_head.parameters())]

    def group_lrs(self) -> list[float]:
        c = self.config
        return [c.learning_rate, c.value_learning_rate or c.learning_rate]

    def extra_state(self) -> dict:
        return {**super().extra_state(), "value_head": self.value_head.state_dict()}

    def load_extra_state(self, state: dict) -> None:
        super().load_extra_state(state)
        self.value_head.load_state_dict(state["value_head"])

    def warm_up_critic(self, rounds: int) -> dict:
        """``rounds`` critic-only rounds: sample a batch, compute its returns R_t (GAE, with
        the critic as it is), and fit V(s_t) = head(h_t) to them over ``ppo_epochs`` x
        ``num_mini_batches`` minibatches, h_t the trunk's hidden states computed without
        gradient, so the policy does not move. The learning-rate schedule does not advance.
        The last round's critic stats before its fit (``vf/loss``, ``vf/explained_var``)."""
        c = self.config
        stats = {}
        for _ in range(rounds):
            r = self.prepare(self.collect())
            with torch.no_grad():
                _, h = completion_outputs(  # [B, T, V], [B, T, H]
                    self.model,
                    r.prompt_ids,
                    r.prompt_mask,
                    r.completion_ids,
                    r.completion_mask,
                    hidden=True,
                )
            _, stats = value_loss(r.values, r.values, r.returns, r.loss_mask, None)
            n = len(r) // c.num_mini_batches
            for _ in range(c.ppo_epochs):
                perm = torch.randperm(len(r), generator=self.generator, device=self.device)
                for k in range(c.num_mini_batches):
                    mb = perm[k * n : (k + 1) * n]  # [b]
                    values = self.value_head(h[mb]).squeeze(-1)  # [b, T]
                    vl, _ = value_loss(
                        values, r.values[mb], r.returns[mb], r.loss_mask[mb], c.cliprange_value
                    )
                    self.optimizer_step(vl)
        return {k: stats[k].item() for k in ("loss", "vf/explained_var")}

    def forward(self, r: Rollout, rows=slice(None), pack: bool = True):
        """log pi of the completion tokens [b, T], logits [b, T, V] and values V(s_t) [b, T].
        ``pack=False``: rows drawn at random (minibatches), whose groups rarely have equal
        sizes, skip the packed forward (``labkit.models.prefix``) and its check."""
        logits, h = completion_outputs(  # [b, T, V], [b, T, H]: the state before each token
            self.model,
            r.prompt_ids[rows],
            r.prompt_mask[rows],
            r.completion_ids[rows],
            r.completion_mask[rows],
            hidden=True,
            pack=pack,
        )
        values = self.value_head(h).squeeze(-1)  # [b, T]
        logp = token_logprobs(logits, r.completion_ids[rows], self.config.temperature or 1.0)
        return logp, logits, values

    def token_rewards(self, r: Rollout) -> torch.Tensor:
        """r_t = -beta KL_t (when kl_in_reward) + r(x, y) on each completion's last token: [B, T]."""
        c = self.config
        r_t = torch.zeros_like(r.old_logp)  # [B, T]
        if c.kl_in_reward and r.ref_logp is not None:
            kl = kl_estimate(r.old_logp, r.ref_logp, c.kl_estimator)  # [B, T]
            if c.kl_clamp_min is not None:  # alpaca_farm: clamp(logp - ref_logp, min=0)
                kl = kl.clamp(min=c.kl_clamp_min)
            r_t = r_t - c.beta * kl * r.loss_mask
        last = (r.lengths - 1).clamp(min=0)  # [B]
        if self.token_score is not None:  # dense per-token scores (process rewards)
            r_t = r_t + self.token_score(r) * r.completion_mask  # [B, T]
        return r_t.scatter_add(1, last[:, None], r.rewards[:, None].to(r_t.dtype))  # [B, T]

    def prepare(self, r: Rollout) -> Rollout:
        """pi_old, V_old and pi_ref; per-token rewards, GAE advantages A_t and returns R_t."""
        c = self.config
        self.verify(r)
        r.loss_mask = self.loss_mask(r)  # [B, T]
        with torch.no_grad():
            r.old_logp, _, r.values = self.forward(r)  # [B, T], [B, T]
            self.reference_logprobs(r)
        r.token_rewards = self.token_rewards(r)  # [B, T]
        r.advantages, r.returns = gae(
            r.token_rewards, r.values, r.completion_mask, gamma=c.gamma, lam=c.lam
        )  # [B, T]
        if c.whiten_advantages:
            r.advantages = whiten(r.advantages, r.loss_mask)
        return r

    def minibatch_loss(self, r: Rollout, mb: torch.Tensor):
        """Clipped policy loss + vf_coef x clipped value loss on rows ``mb``: (loss, stats, logp,
        logits, H), H the entropy [b, T] of pi_theta the bonus used (detached; None when
        entropy_coef = 0), so it is computed once."""
        c = self.config
        logp, logits, values = self.forward(r, mb, pack=c.num_mini_batches == 1)  # [b, T] x3
        ref = None if r.ref_logp is None else r.ref_logp[mb]
        pl, st = policy_loss(
            logp,
            r.old_logp[mb],
            r.advantages[mb],
            r.loss_mask[mb],
            loss_type=c.loss_type,
            epsilon=c.epsilon,
            epsilon_high=c.epsilon_high,
            importance_sampling_level="token",
            max_completion_length=self.max_len,
            ref_logp=ref,
            beta=0.0 if c.kl_in_reward else c.beta,
            kl_estimator=c.kl_estimator,
        )
        vl, vst = value_loss(
            values, r.values[mb], r.returns[mb], r.loss_mask[mb], c.cliprange_value
        )
        H = None
        if c.entropy_coef:  # L = policy + c_vf value - c_H entropy (PPO, 1707.06347 eq. 9)
            H = entropy_from_logits(logits, c.temperature or 1.0)  # [b, T] with grad
            pl = pl + entropy_bonus(
                logits, r.loss_mask[mb], c.entropy_coef, c.temperature or 1.0, H
            )
            H = H.detach()
        return pl + c.vf_coef * vl, {**st, "vf/clipfrac": vst["vf/clipfrac"]}, logp, logits, H

    def optimise(self, r: Rollout) -> dict:
        """ppo_epochs x num_mini_batches clipped updates; the first minibatch's stats, the clip
        and ratio stats of every update (a list, under ``"updates"``), and in
        ``stats["per_token"]`` every completion's per-token stats as its minibatch of the LAST
        epoch saw them (log pi, ratio, clipped, weight, loss, k1/k2/k3): [B, T] each."""
        c, B = self.config, len(r)
        n = B // c.num_mini_batches
        self.model.train()
        first, per_token, updates = None, {}, []
        for epoch in range(c.ppo_epochs):
            perm = torch.randperm(B, generator=self.generator, device=self.device)  # [B]
            for k in range(c.num_mini_batches):
                mb = perm[k * n : (k + 1) * n]  # [b]
                loss, st, logp, logits, H = self.minibatch_loss(r, mb)
                grad_norm = self.optimizer_step(loss)
                updates.append(st)
                if epoch == c.ppo_epochs - 1 and c.diagnostics:
                    _scatter(per_token, {"logp": logp.detach(), **st["per_token"]}, mb, B)
                if first is None:
                    if H is None:  # no bonus: the first minibatch's entropy, for the record
                        H = entropy_from_logits(logits.detach(), c.temperature or 1.0)  # [b, T]
                    first = {
                        **st,
                        "loss": loss.detach(),
                        "grad_norm": grad_norm,
                        "mb": mb,
                        "entropy": H,
                    }
        first["per_token"], first["updates"] = per_token, updates
        return first

    def train_step(self) -> StepRecord:
        """Metrics (GRPO's keys + vf/*), sample rows and per-token rows: GRPO's keys (log pi,
        ratio, clipped, weight, loss, k1/k2/k3 from the last epoch; ``advantage`` is A at the
        first token, as in the samples) + ``advantage_t`` (A_t), ``value``, ``return``,
        ``reward`` (r_t)."""
        c, warmup = self.config, {}
        if self.global_step == 0 and c.value_warmup_steps:  # before the policy's first update
            v = self.warm_up_critic(c.value_warmup_steps)
            warmup = {"vf/warmup_loss": v["loss"], "vf/warmup_explained_var": v["vf/explained_var"]}
        t0 = time.perf_counter()
        r = self.collect()
        t_rollout = time.perf_counter() - t0
        self.prepare(r)
        _, critic = value_loss(
            r.values, r.values, r.returns, r.loss_mask, None
        )  # the critic before updating
        st = self.optimise(r)
        mb, entropy, per_token = st.pop("mb"), st.pop("entropy"), st.pop("per_token")
        updates = st.pop("updates")
        logp = per_token.pop("logp", r.old_logp)  # [B, T] (diagnostics=0: nothing recorded)
        per_token.update(
            {
                "advantage_t": r.advantages,
                "value": r.values,
                "return": r.returns,
                "reward": r.token_rewards,
            }
        )  # [B, T] each
        mask = r.loss_mask
        m = step_metrics(
            r,
            st,
            updates,
            entropy=entropy,
            entropy_mask=r.completion_mask[mb],
            G=c.num_generations,
        )
        m.update(
            {
                "adv/mean_abs": (r.advantages.abs() * mask).sum().item() / mask.sum().item(),
                "vf/loss": critic["loss"].item(),
                "vf/explained_var": critic["vf/explained_var"].item(),
                "vf/value_mean": critic["vf/value_mean"].item(),
                "time/rollout": t_rollout,
                **warmup,
            }
        )
        return StepRecord(
            m,
            sample_rows(r, c.num_generations),
            token_rows(r, self.tokenizer, logp, per_token, c.diagnostics),
        )


def _scatter(into: dict, per_token: dict, rows: torch.Tensor, B: int) -> None:
    """Write a minibatch's [b, T] per-token tensors into rows ``rows`` of [B, T] buffers."""
    for k, v in per_token.items():
        if k not in into:
            into[k] = v.new_full((B, v.shape[1]), float("nan"))  # [B, T]
        into[k][rows] = v
