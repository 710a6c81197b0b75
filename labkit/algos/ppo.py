"""PPO for language models with a value head (the seed material's walk-through; InstructGPT).

One step:
  1. sample completions (as GRPO; ``num_generations`` may be 1) and score them: r(x, y);
  2. one no-grad pass for pi_old's log-probs and the critic's values V(s_t), one for pi_ref;
  3. per-token reward: r_t = -beta KL_t (estimator ``kl_estimator``, k1 by default) and + r(x, y)
     on the last token (``kl_in_reward``; otherwise beta KL goes into the loss as in GRPO);
  4. GAE: A_t = sum_l (gamma lam)^l delta_{t+l}, returns R_t = A_t + V(s_t); A whitened;
  5. ``ppo_epochs`` epochs of ``num_mini_batches`` minibatches of
     L = policy_loss (clipped ratio, per token A_t) + vf_coef * value_loss (clipped to V_old);
  6. record: metrics of the first minibatch; per-token rows of the first ``diagnostics``
     completions as their minibatch of the first epoch saw them (ratio 1 only in minibatch 1).
Sources: Schulman et al. 2017 (1707.06347), Ouyang et al. 2022 (2203.02155), TRL's former
PPOTrainer, cleanrl ppo.py. Departures: the value head is a linear layer on the policy's last
hidden state (shared trunk, as TRL's AutoModelForCausalLMWithValueHead), initialised to 0;
one optimizer, the head with its own learning rate (``value_learning_rate``).
"""

from __future__ import annotations

import time

import torch

from labkit.algos.config import PPOConfig
from labkit.algos.grpo import GRPOTrainer
from labkit.core import entropy_from_logits, gae, kl_estimate, policy_loss, value_loss, whiten
from labkit.core.logprobs import token_logprobs
from labkit.models.prefix import completion_outputs
from labkit.runs.records import group_correct, sample_rows, step_metrics, token_rows


class PPOTrainer(GRPOTrainer):
    """``PPOTrainer(model="tiny", reward_funcs=[...], max_steps=50).train()``: PPO with a critic.

    Same API as :class:`GRPOTrainer` (pause, update, from_run, fork, the run log); the value
    head is ``self.value_head`` and is saved in checkpoints.
    """

    config_class = PPOConfig
    algorithm = "ppo"

    def build_heads(self) -> list[list]:
        hidden = self.model.config.hidden_size
        self.value_head = torch.nn.Linear(hidden, 1)
        torch.nn.init.zeros_(self.value_head.weight)
        torch.nn.init.zeros_(self.value_head.bias)
        return [list(self.value_head.parameters())]

    def group_lrs(self) -> list[float]:
        c = self.config
        return [c.learning_rate, c.value_learning_rate or c.learning_rate]

    def extra_state(self) -> dict:
        return {"value_head": self.value_head.state_dict()}

    def load_extra_state(self, state: dict) -> None:
        self.value_head.load_state_dict(state["value_head"])

    def forward(self, batch, rows=slice(None)):
        """log pi of the completion tokens [b, T], logits [b, T, V] and values V(s_t) [b, T]."""
        logits, h = completion_outputs(  # [b, T, V], [b, T, H]: the state before each token
            self.model, batch.prompt_ids[rows], batch.prompt_mask[rows],
            batch.completion_ids[rows], batch.completion_mask[rows], hidden=True)
        values = self.value_head(h).squeeze(-1)  # [b, T]
        logp = token_logprobs(logits, batch.completion_ids[rows], self.config.temperature or 1.0)
        return logp, logits, values

    def token_rewards(self, batch, rewards, mask):
        """r_t = -beta KL_t (when kl_in_reward) + r(x, y) on each completion's last token: [B, T]."""
        c = self.config
        r = torch.zeros_like(batch.old_logp)  # [B, T]
        if c.kl_in_reward and batch.ref_logp is not None:
            r = r - c.beta * kl_estimate(batch.old_logp, batch.ref_logp, c.kl_estimator) * mask
        last = (batch.lengths - 1).clamp(min=0)  # [B]
        return r.scatter_add(1, last[:, None], rewards[:, None].to(r.dtype))  # [B, T]

    def _step(self) -> dict:
        c, t0 = self.config, time.perf_counter()
        batch, examples, rewards, per_fn, info = self.collect()
        t_rollout = time.perf_counter() - t0
        mask = batch.completion_mask.float()  # [B, T]
        if c.mask_truncated_completions:
            mask = mask * (~batch.truncated).float().unsqueeze(1)
        with torch.no_grad():
            batch.old_logp, _, old_values = self.forward(batch)  # [B, T], [B, T]
            self._reference_logprobs(batch)
        r_t = self.token_rewards(batch, rewards, mask)  # [B, T]
        adv, returns = gae(r_t, old_values, batch.completion_mask, c.gamma, c.lam)  # [B, T]
        if c.whiten_advantages:
            adv = whiten(adv, mask)
        _, critic = value_loss(old_values, old_values, returns, mask, None)  # before updating
        stats = self.optimise(batch, mask, adv, returns, old_values)
        return self.record(batch, examples, rewards, per_fn, info, mask, adv, returns,
                           old_values, r_t, critic, stats, t0, t_rollout)

    def optimise(self, batch, mask, adv, returns, old_values) -> dict:
        """ppo_epochs x num_mini_batches clipped updates; the first minibatch's stats, and in
        ``stats["per_token"]`` every completion's per-token stats as its minibatch of the first
        epoch saw them (log pi, ratio, clipped, weight, loss, k1/k2/k3): [B, T] each."""
        c, B = self.config, batch.completion_ids.shape[0]
        n = B // c.num_mini_batches
        self.model.train()
        first, per_token = None, {}
        for epoch in range(c.ppo_epochs):
            perm = torch.randperm(B, generator=self.generator)  # [B]
            for k in range(c.num_mini_batches):
                mb = perm[k * n:(k + 1) * n]  # [b]
                logp, logits, values = self.forward(batch, mb)  # [b, T] x3
                ref = None if batch.ref_logp is None else batch.ref_logp[mb]
                pl, st = policy_loss(logp, batch.old_logp[mb], adv[mb], mask[mb], c.loss_type,
                                     c.epsilon, c.epsilon_high, "token",
                                     batch.completion_ids.shape[1], ref,
                                     0.0 if c.kl_in_reward else c.beta, c.kl_estimator)
                vl, vst = value_loss(values, old_values[mb], returns[mb], mask[mb],
                                     c.cliprange_value)
                loss = pl + c.vf_coef * vl
                self.optimizer.zero_grad(set_to_none=True)
                loss.backward()
                grad_norm = torch.nn.utils.clip_grad_norm_(
                    self.params, c.max_grad_norm if c.max_grad_norm > 0 else float("inf"))
                self.optimizer.step()
                if epoch == 0 and c.diagnostics:
                    _scatter(per_token, {"logp": logp.detach(), **st["per_token"]}, mb, B)
                if first is None:
                    first = {**st, "loss": loss.detach(), "grad_norm": grad_norm,
                             "vf/clipfrac": vst["vf/clipfrac"], "mb": mb,
                             "entropy": entropy_from_logits(logits.detach(), c.temperature or 1.0)}
        first["per_token"] = per_token
        return first

    def record(self, batch, examples, rewards, per_fn, info, mask, adv, returns, old_values, r_t,
               critic, st, t0, t_rollout) -> dict:
        """Metrics (GRPO's keys + vf/*), sample rows and per-token rows: GRPO's keys (log pi,
        ratio, clipped, weight, loss, k1/k2/k3 from the first epoch; ``advantage`` is A at the
        first token, as in the samples) + ``advantage_t`` (A_t), ``value``, ``return``, ``reward``
        (r_t)."""
        c = self.config
        lr = self.optimizer.param_groups[0]["lr"]
        self.scheduler.step()
        self.global_step += 1
        correct = group_correct(self.task, batch.completions, examples)  # [B]
        adv0 = adv[:, 0]  # [B] the first token's advantage stands for the sequence
        mb, entropy, per_token = st.pop("mb"), st.pop("entropy"), st.pop("per_token")
        logp = per_token.pop("logp", batch.old_logp)  # [B, T] (diagnostics=0: nothing recorded)
        per_token.update({"advantage_t": adv, "value": old_values, "return": returns,
                          "reward": r_t})  # [B, T] each
        m = step_metrics(self.global_step, batch, rewards, per_fn, adv0, correct, st, entropy,
                         batch.completion_mask[mb], c.num_generations)
        m.update({**info, "adv/mean_abs": (adv.abs() * mask).sum().item() / mask.sum().item(),
                  "vf/loss": critic["loss"].item(), "vf/explained_var": critic["vf/explained_var"].item(),
                  "vf/value_mean": critic["vf/value_mean"].item(), "lr": lr,
                  "time/rollout": t_rollout, "time/step": time.perf_counter() - t0})
        self.log.log_step(
            m, sample_rows(self.global_step, batch, examples, rewards, per_fn, adv0, correct,
                           c.num_generations),
            token_rows(self.global_step, batch, self.tokenizer, logp, adv0,
                       {"per_token": per_token}, c.diagnostics))
        self.maybe_save()
        return m


def _scatter(into: dict, per_token: dict, rows: torch.Tensor, B: int) -> None:
    """Write a minibatch's [b, T] per-token tensors into rows ``rows`` of [B, T] buffers."""
    for k, v in per_token.items():
        if k not in into:
            into[k] = torch.full((B, v.shape[1]), float("nan"), dtype=v.dtype)  # [B, T]
        into[k][rows] = v
