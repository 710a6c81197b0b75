"""Reward functions built on k reward models: a single member (the proxy), an ensemble (mean or
min, :func:`labkit.core.overoptimization.ensemble_reward`) and PAR's bounded reward
(:func:`~labkit.core.overoptimization.preference_as_reward`), with TRL's signature.

Every function made from one :class:`MemberScores` shares its scores: the k members score a
batch once, however many of these functions (the optimised one, the proxy logged beside it at
weight 0) read it.
"""

from __future__ import annotations

import torch

from labkit.core.overoptimization import ensemble_reward, preference_as_reward
from labkit.models.rollout import rollout
from labkit.tasks.base import max_completion_tokens


class MemberScores:
    """``scores(prompts, completions)`` -> [k, B]: each member's r(x, y); the last batch's
    scores are kept, so a second reader of the same batch costs nothing."""

    def __init__(self, members):
        self.members = list(members)
        self._key, self._scores = None, None

    @torch.no_grad()
    def __call__(self, prompts, completions) -> torch.Tensor:
        key = (tuple(prompts), tuple(completions))
        if key != self._key:
            rows = [rm.eval()(list(prompts), list(completions)).float() for rm in self.members]
            self._key, self._scores = key, torch.stack(rows).cpu()  # [k, B]
        return self._scores


def _reward(fn, name: str):
    def reward(completions, prompts, **kwargs):
        return fn(list(prompts), list(completions)).tolist()

    reward.__name__ = name
    reward.labkit_inline = True  # torch models: in the trainer's process, no fork
    return reward


def member_reward(scores: MemberScores, k: int = 0, name: str = "proxy"):
    """Member ``k``'s score alone: the single learned reward."""
    return _reward(lambda p, c: scores(p, c)[k], name)


def ensemble(scores: MemberScores, how: str = "min", name: str | None = None):
    """The members' scores combined by ``how`` (``"mean"`` or ``"min"``, Coste et al. 2023)."""
    return _reward(lambda p, c: ensemble_reward(scores(p, c), how), name or f"ensemble_{how}")


class ReferenceRewards:
    """r(x, y_ref_m) [B, M] for PAR: M completions of each prompt sampled once from the frozen
    initial policy (temperature 1, from one generator seeded once) and scored by the reward
    model ``rm``, kept per prompt (PAR's reference responses come from the SFT model)."""

    def __init__(self, rm, policy, tokenizer, task, M: int, seed: int):
        self.rm, self.policy, self.tokenizer, self.task = rm, policy, tokenizer, task
        self.M, self.cache = M, {}
        self.gen = torch.Generator(next(policy.parameters()).device).manual_seed(seed)

    @torch.no_grad()
    def __call__(self, prompts) -> torch.Tensor:
        new = sorted(set(prompts) - set(self.cache))
        if new:
            items = [p for p in new for _ in range(self.M)]
            length = max_completion_tokens(self.task)
            refs = rollout(self.policy, self.tokenizer, items, length, generator=self.gen)
            r = self.rm.eval()(items, refs.completions).float().cpu().view(len(new), self.M)
            self.cache.update(zip(new, r))
        return torch.stack([self.cache[p] for p in prompts])  # [B, M]


def par_reward(scores: MemberScores, reference: ReferenceRewards, k: int = 0, name="par"):
    """PAR on member ``k``: mean_m sigmoid(r_k(x, y) - r_k(x, y_ref_m)) (Fu et al. 2025);
    ``reference`` must score with the same member."""
    return _reward(lambda p, c: preference_as_reward(scores(p, c)[k], reference(p)), name)
