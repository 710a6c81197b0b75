"""PG -> TRPO -> PPO on a language model: GRPO's sampling and group advantages, three ways to
move the policy from each batch (``TRPOConfig.method``), every update's KL measured the same way.

  clip        PPO-clip, GRPO's loss (``GRPOTrainer``'s update); num_iterations = 1 is plain PG
  kl_penalty  PPO's L^KLPEN = E[rho A] - beta_old KL_bar (Schulman et al. 2017, 1707.06347
              eq. 8), mu epochs of AdamW, no clipping; then beta_old by d vs d_targ (sec. 4)
  trpo        max E[rho A] s.t. KL_bar <= delta (Schulman et al. 2015, 1502.05477): one natural-
              gradient step x ~ F^{-1} g by conjugate gradient on Fisher-vector products, scaled
              to sqrt(2 delta / x^T F x), shortened by a line search (``labkit.core.trust_region``)

KL_bar is the exact mean over the batch's completion tokens of KL(pi_old(.|s_t) ||
pi_theta(.|s_t)) over the whole vocabulary (the tiny policy's 99 characters; a large vocabulary
would want a sampled estimate), rho the per-token ratio, E[rho A] aggregated by ``loss_type``.
After each step, one more forward measures ``kl/update``, KL_bar of the update just taken, for
every method: the quantity TRPO bounds, PPO-KL steers and PPO-clip and PG leave free.

Departures, and why: the advantages are GRPO's group z-scores (no critic), for every method;
TRPO's double backward runs attention through PyTorch's math kernel (the fused CPU kernel has
no second derivative); TRPO's step ignores the AdamW optimizer and its schedule; PPO's KL
penalty is on the full-vocabulary KL of each token, as the paper's KL[pi_old(.|s), pi(.|s)].
"""

from __future__ import annotations

import math
import warnings

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from labkit.algos.base import StepRecord
from labkit.algos.config import TRPOConfig
from labkit.algos.grpo import GRPOTrainer
from labkit.core import entropy_from_logits, masked_mean, policy_loss
from labkit.core.kl import kl_exact
from labkit.core.kl_control import adaptive_kl_beta
from labkit.core.trust_region import (
    conjugate_gradient,
    fisher_vector_product,
    flat_grad,
    line_search,
    natural_step,
)
from labkit.models.rollout import Rollout, completion_logprobs
from labkit.runs.records import sample_rows, step_metrics, token_rows


class TRPOTrainer(GRPOTrainer):
    """``TRPOTrainer("tiny", reward_funcs=[...], method="trpo", delta=0.01).train()``; keyword
    overrides go to :class:`~labkit.algos.config.TRPOConfig`."""

    config_class = TRPOConfig
    algorithm = "trpo"

    def setup(self) -> None:
        super().setup()
        self.beta_old = self.config.beta_old  # the kl_penalty's beta, moved after each step
        self.old_logits = None  # [B, T, V] pi_old's logits of the step's batch

    def extra_state(self) -> dict:
        return {**super().extra_state(), "beta_old": self.beta_old}

    def load_extra_state(self, state: dict) -> None:
        super().load_extra_state(state)
        self.beta_old = state.get("beta_old", self.config.beta_old)

    # -- what the step needs ---------------------------------------------------------------
    @torch.no_grad()
    def old_logprobs(self, r: Rollout) -> None:
        """pi_old's log-probs [B, T] and logits [B, T, V] (KL_bar needs the whole distribution),
        from one no-grad forward, whatever mu."""
        tau = self.config.temperature or 1.0
        r.old_logp, logits = completion_logprobs(self.model, r, tau, True)
        self.old_logits = logits.detach()

    def kl_bar(self, logits: torch.Tensor, r: Rollout) -> torch.Tensor:
        """Exact mean KL(pi_old(.|s_t) || pi_theta(.|s_t)) over the loss mask: [B, T, V] -> []."""
        tau = self.config.temperature or 1.0
        kl = kl_exact(self.old_logits / tau, logits / tau)  # [B, T]
        return masked_mean(kl, r.loss_mask)

    def loss(self, logp: torch.Tensor, batch: Rollout):
        """PPO-clip's loss for ``clip``; the unclipped surrogate -E[rho A] (+ beta KL to pi_ref)
        for ``kl_penalty`` and ``trpo``, aggregated by ``loss_type``."""
        c = self.config
        if c.method == "clip":
            return super().loss(logp, batch)
        return policy_loss(
            logp,
            batch.old_logp,
            batch.advantages,
            batch.loss_mask,
            loss_type=c.loss_type,
            epsilon=math.inf,  # no clipping: TRPO's constraint or PPO's penalty bounds the step
            importance_sampling_level=c.importance_sampling_level,
            max_completion_length=self.max_len,
            ref_logp=batch.ref_logp,
            beta=c.beta,
            kl_estimator=c.kl_estimator,
        )

    def update_loss(self, batch: Rollout, rows, first: bool):
        """GRPO's inner update, plus beta_old KL_bar for ``kl_penalty`` (PPO eq. 8)."""
        loss, stats, logp, logits, H = super().update_loss(batch, rows, first)
        if self.config.method == "kl_penalty":
            kl = self.kl_bar(logits, batch)
            loss = loss + self.beta_old * kl
            stats["loss/kl_old"] = (self.beta_old * kl).detach()
        return loss, stats, logp, logits, H

    def prepare(self, r: Rollout) -> Rollout:
        self.batch = super().prepare(r)  # kept for the KL after the update
        return self.batch

    # -- the step --------------------------------------------------------------------------
    def step(self) -> dict:
        """The base's step; TRPO's never calls the optimizer, so torch's warning that the
        schedule stepped first is expected there and silenced."""
        with warnings.catch_warnings():
            if self.config.method == "trpo":
                warnings.filterwarnings("ignore", message="Detected call of `lr_scheduler")
            return super().step()

    def train_step(self) -> StepRecord:
        c = self.config
        record = self.trpo_step() if c.method == "trpo" else super().train_step()
        d = record.metrics.get("trpo/kl") if c.method == "trpo" else self.kl_after()
        record.metrics["kl/update"] = d
        record.metrics["beta_old"] = self.beta_old  # the beta this step used
        if c.method == "kl_penalty" and c.kl_controller == "adaptive":
            self.beta_old = adaptive_kl_beta(self.beta_old, d, c.d_targ)  # the next step's
        self.old_logits = self.batch = None
        return record

    @torch.no_grad()
    def kl_after(self) -> float:
        """KL_bar of the update just taken: one no-grad forward at the new theta."""
        tau = self.config.temperature or 1.0
        _, logits = completion_logprobs(self.model, self.batch, tau, True)
        return float(self.kl_bar(logits, self.batch))

    def trpo_step(self) -> StepRecord:
        """One TRPO update: g, x ~ F^{-1} g, the step to delta, the line search; the record as
        GRPO's (metrics of the surrogate at theta_old, samples, per-token rows)."""
        c, tau = self.config, self.config.temperature or 1.0
        r = self.prepare(self.collect())
        self.model.train()
        params = [p for p in self.model.parameters() if p.requires_grad]
        with sdpa_kernel(SDPBackend.MATH):  # the fused CPU kernel has no double backward
            logp, logits = completion_logprobs(self.model, r, tau, True)  # [B, T], [B, T, V]
            loss, stats = self.loss(logp, r)
            g = -flat_grad(loss, params, retain_graph=True)  # [N] grad of L = -loss
            grad_kl = flat_grad(self.kl_bar(logits, r), params, create_graph=True)  # [N]
            Fvp = lambda v: fisher_vector_product(grad_kl, params, v, damping=c.damping)
            x, cg = conjugate_gradient(Fvp, g, iters=c.cg_iters)
            s, step = natural_step(x, Fvp(x), g, c.delta)
        theta_old = parameters_to_vector(params).detach()
        frac, ls = self.line_search(r, params, theta_old, s.detach(), loss.detach(), step)
        vector_to_parameters(theta_old + frac * s.detach(), params)
        first = {**stats, **cg, **step, **ls, "loss": loss.detach(), "grad_norm": g.norm()}
        entropy = entropy_from_logits(logits.detach(), tau)  # [B, T]
        m = step_metrics(
            r, first, [stats], entropy=entropy, entropy_mask=r.completion_mask, G=c.num_generations
        )
        tokens = token_rows(
            r, self.tokenizer, logp.detach(), stats.get("per_token", {}), c.diagnostics
        )
        return StepRecord(m, sample_rows(r, c.num_generations), tokens)

    @torch.no_grad()
    def line_search(self, r, params, theta_old, s, loss0, step) -> tuple[float, dict]:
        """:func:`labkit.core.trust_region.line_search` with the true surrogate and KL_bar of
        theta_old + f s, each from one no-grad forward."""
        c, tau = self.config, self.config.temperature or 1.0

        def evaluate(f: float) -> tuple[float, float]:
            vector_to_parameters(theta_old + f * s, params)
            logp, logits = completion_logprobs(self.model, r, tau, True)
            loss, _ = self.loss(logp, r)
            return float(loss0 - loss), float(self.kl_bar(logits, r))

        return line_search(
            evaluate,
            float(step["trpo/expected_improve"]),
            delta=c.delta,
            backtrack_coef=c.backtrack_coef,
            max_backtracks=c.max_backtracks,
        )
