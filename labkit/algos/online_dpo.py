"""Online DPO: sample two completions from the current policy, let the verifier pick, one DPO step.

Guo et al. 2024 ("Direct Language Model Alignment from Online AI Feedback", OAIF, arXiv
2402.04792): on each training iteration sample two responses from the current model, have an
annotator choose the preferred one, and update with a direct-alignment loss (DPO here), so the
pairs follow the policy instead of coming from a fixed, earlier one. TRL has it as
``trl.experimental.online_dpo.OnlineDPOTrainer``; one step of labkit's:
  1. ``prompts_per_step`` prompts, two completions each (:meth:`SamplingTrainer.generate`,
     G = 2), scored by the reward functions and judged by the verifier (``correct``);
  2. :func:`verifier_pairs`: chosen = the correct completion, rejected = the wrong one, on the
     prompts whose two completions disagree;
  3. log pi and log pi_ref of the pairs' completions (sums over tokens, DPO's
     :func:`~labkit.algos.dpo.batch_sequence_logprobs` and ``sequence_logp``), then
     ``labkit.core.dpo_loss`` (sigmoid) and one AdamW step.
Logged: ``reward/mean``, ``accuracy``, ``kl/k1``, ``kl/k3`` (per token, the sampler's log-probs
against pi_ref over every sample), TRL's ``rewards/chosen|rejected|margins|accuracies`` and
``logps/chosen|rejected``, ``pairs/frac`` (prompts that made a pair) and ``samples/drawn``.

Departures from TRL's ``OnlineDPOTrainer.training_step``, and why:
- A prompt whose two completions the verifier scores alike makes no pair. TRL pairs every
  prompt (``mask = first_half >= second_half``: on a tie the first is chosen); with a 0/1
  verifier a tie says nothing about which is better, so training on it would push a coin flip.
- Only the pairs' rows go through the policy with gradient (TRL forwards all 2B completions):
  the others add nothing to the loss; KL is read from the sampler's log-probs, which are the
  policy's at sampling time (pi_old = pi_theta before the step).
- The two completions of a prompt sit side by side (``[x0, x0', x1, x1', ...]``, labkit's group
  layout); TRL puts the first of every prompt, then the second.
- A step with no pair (every prompt a tie) takes no optimizer step; its loss metrics are NaN.
"""

from __future__ import annotations

import math
import time

import torch

from labkit.algos.base import StepRecord
from labkit.algos.config import OnlineDPOConfig
from labkit.algos.dpo import batch_sequence_logprobs, sequence_logp
from labkit.algos.sampling import SamplingTrainer
from labkit.core import dpo_loss, kl_k1, kl_k3, masked_mean
from labkit.runs.records import sample_rows


def verifier_pairs(correct: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(chosen, rejected) row indices [n] of the pairs in ``correct`` [2P] (two completions a
    prompt, side by side): on each prompt whose two verdicts differ, the correct one is chosen.

    >>> verifier_pairs(torch.tensor([True, False, False, False, True, True, False, True]))
    (tensor([0, 7]), tensor([1, 6]))
    """
    c = correct.view(-1, 2)  # [P, 2]
    mixed = (c[:, 0] != c[:, 1]).nonzero().squeeze(-1)  # [n] prompts with one right, one wrong
    first_right = c[mixed, 0].long()  # [n] 1 where the first completion is the correct one
    chosen = 2 * mixed + 1 - first_right  # [n]
    rejected = 2 * mixed + first_right  # [n]
    return chosen, rejected


class OnlineDPOTrainer(SamplingTrainer):
    """``OnlineDPOTrainer(model="tiny", reward_funcs=["exact_match"], max_steps=50).train()``.

    Keyword overrides go to :class:`OnlineDPOConfig`; the verifier (the task's, or
    ``verifier=``) decides chosen and rejected, the reward functions are logged."""

    config_class = OnlineDPOConfig
    algorithm = "online_dpo"

    def __init__(self, model="tiny", reward_funcs=("exact_match",), task="addition", **kw):
        kw.pop("track_kl", None)  # a resumed run passes it back; DPO needs pi_ref either way
        super().__init__(model, reward_funcs, task, track_kl=True, **kw)

    def setup(self) -> None:
        super().setup()
        self.drawn = 0  # samples drawn so far (restored from the log on resume)

    def on_log_ready(self) -> None:
        m = self.log.metrics
        if len(m) and "samples/drawn" in m:
            self.drawn = int(m["samples/drawn"].iloc[-1])

    def postfix(self, m: dict) -> dict:
        return {"acc": f"{m['accuracy']:.2f}", "pairs": f"{m['pairs/frac']:.2f}"}

    def train_step(self) -> StepRecord:
        c, t0 = self.config, time.perf_counter()
        r = self.collect()
        t_rollout = time.perf_counter() - t0
        self.verify(r)
        if r.correct is None:
            raise ValueError("online DPO needs a verifier: a task that verifies, or verifier=")
        self.drawn += len(r)
        self.reference_logprobs(r)  # [B, T] pi_ref of every sample
        mask = r.completion_mask.float()  # [B, T]
        chosen, rejected = verifier_pairs(r.correct)  # [n], [n]
        m = {
            "reward/mean": r.rewards.mean().item(),
            "accuracy": r.correct.float().mean().item(),
            "kl/k1": masked_mean(kl_k1(r.sample_logp, r.ref_logp), mask).item(),
            "kl/k3": masked_mean(kl_k3(r.sample_logp, r.ref_logp), mask).item(),
            "len/mean": r.lengths.float().mean().item(),
            "pairs/frac": len(chosen) / (len(r) // 2),
            "samples/drawn": self.drawn,
            "time/rollout": t_rollout,
        }
        if len(chosen):
            m |= self.dpo_update(r, torch.cat([chosen, rejected]))
        else:  # every prompt a tie: nothing to prefer, no step
            nan = {k: math.nan for k in ("loss", "rewards/chosen", "rewards/rejected")}
            m |= nan | {"rewards/margins": math.nan, "rewards/accuracies": math.nan}
        r.advantages = torch.zeros(len(r), device=self.device)  # the sample rows' column
        return StepRecord(m, sample_rows(r, c.num_generations))

    def dpo_update(self, r, rows: torch.Tensor) -> dict:
        """One DPO step on the pairs ``rows`` = [chosen..., rejected...] of rollout ``r``."""
        c, tau = self.config, self.config.temperature or 1.0
        batch = r.select(rows)  # [2n] rows: chosen, then rejected
        self.model.train()
        logp = batch_sequence_logprobs(self.model, batch, temperature=tau)  # [2n]
        ref = sequence_logp(batch.ref_logp, batch.completion_mask.float())  # [2n]
        pi_w, pi_l = logp.chunk(2)  # [n], [n]
        ref_w, ref_l = ref.chunk(2)  # [n], [n]
        loss, stats = dpo_loss(pi_w, pi_l, ref_w, ref_l, c.beta)
        grad_norm = self.optimizer_step(loss)
        return {
            **{k: float(v) for k, v in stats.items()},
            "logps/chosen": pi_w.mean().item(),
            "logps/rejected": pi_l.mean().item(),
            "grad_norm": float(grad_norm),
        }
