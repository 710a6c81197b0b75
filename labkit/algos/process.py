"""Process supervision in the RL loop: per-step rewards to GRPO (as advantages) and to PPO (as
dense per-token rewards), from the exact step labels or from a learned PRM.

- :class:`ProcessGRPOTrainer`: DeepSeekMath's process-supervised GRPO (Shao et al. 2024,
  arXiv 2402.03300, sec. 4.1.3): each step's reward is normalised over all step rewards of the
  group, and a token's advantage is the sum of the normalised rewards of the steps from its own
  on (``labkit.core.process.process_advantages``). The answer is the last step, so the outcome
  is graded too.
- :func:`process_token_score`: the ``PPOTrainer.token_score`` hook: each thought step's reward,
  times ``weight``, on its last token; the outcome reward stays on the last token, so PPO's
  return from a step on is (weighted) right steps to come + the outcome.

Departure: the step rewards are the exact labels (1 right, 0 wrong) unless a learned
``StepVerifier`` is given, whose probabilities then stand in for them (exploitable, on purpose).
"""

from __future__ import annotations

import torch

from labkit.algos.grpo import GRPOTrainer
from labkit.core.process import process_advantages
from labkit.rewards.process import step_tensors


def step_rewards(r, T: int, prm=None, task: str = "scratchpad"):
    """(ends, rewards, valid) [B, K] of a rollout's process steps on ``task`` (its step
    parser: ``labkit.rewards.process``): the labels, or a PRM's probabilities p(step right) at
    the same steps."""
    device = r.completion_ids.device
    ends, labels, valid = step_tensors(r.completions, r.prompts, T, device, task)
    if prm is None:
        return ends, labels, valid
    with torch.no_grad():
        prm.eval()
        lg, _, _ = prm.step_logits(r.prompts, r.completions)  # [B, K]
    return ends, lg.sigmoid().to(labels.dtype) * valid, valid


class ProcessGRPOTrainer(GRPOTrainer):
    """``ProcessGRPOTrainer("tiny-think", reward_funcs=["answer_match"], task="scratchpad",
    prm=None)``: GRPO whose advantages are DeepSeekMath's process-supervised ones, [B, T];
    the reward functions are still computed and logged (and give ``reward/mean``). The steps
    are the task's (``scratchpad`` or ``graded``, ``labkit.rewards.process.TASKS``)."""

    algorithm = "grpo-process"

    def __init__(self, *args, prm=None, **kwargs):
        self.prm = prm
        super().__init__(*args, **kwargs)

    def prepare(self, r):
        super().prepare(r)
        T = r.completion_ids.shape[1]
        ends, rew, valid = step_rewards(r, T, self.prm, self.task.name)  # [B, K] x3
        r.advantages = process_advantages(
            ends, rew, valid, self.config.num_generations, T
        )  # [B, T]
        return r


def process_token_score(weight: float = 0.25, prm=None):
    """A ``PPOTrainer.token_score`` hook: r_t += weight * r_k on the last token of each thought
    step k (the answer step is left to the outcome reward). ``weight`` 1 / (steps per thought)
    makes a fully right thought worth as much as a right answer."""

    def score(r) -> torch.Tensor:
        T = r.completion_ids.shape[1]
        ends, rew, valid = step_rewards(r, T, prm)  # [B, K] x3
        last = valid.long().cumsum(-1) == valid.sum(-1, keepdim=True)  # [B, K] the answer
        thought = (valid & ~last).to(rew.dtype)  # [B, K]
        out = torch.zeros_like(r.completion_ids, dtype=rew.dtype)  # [B, T]
        return out.scatter_add(1, ends, weight * rew * thought)  # [B, T]

    return score
