"""GRPO on multi-turn episodes: the policy acts, a tool or an environment answers, the loss
counts only what the policy wrote.

One step: G episodes per prompt (:func:`labkit.models.episode.episodes`, one environment per
episode from ``env``, TRL's ``environment_factory``), rewards from ``reward_funcs`` on the
whole episode text plus the environment's ``get_reward()`` when it has one (weight 1, named
after its class, as TRL), group advantages, then the GRPO loss over
loss_mask = completion_mask * env_mask (TRL 1.16: ``completion_mask * tool_mask``): the
environment's tokens get no gradient and no KL, under every ``loss_type``.
The whole episode shares one advantage (outcome reward); ``turn_rewards`` credits it to the
last turn. Tool faults (raised, timeout, junk, unknown tool) are logged as ``tool_failure``
events and counted in ``tools/failure_rate``; the run goes on.
Metrics added: ``tools/call_rate`` (episodes with a call), ``tools/calls_per_episode``,
``tools/failure_rate`` (failed / calls, TRL's), ``turns/mean``, ``turns/cut_tokens``,
``turns/cut_turns``, ``reward/per_turn``, ``len/policy``, ``len/env``.
"""

from __future__ import annotations

from collections import Counter

import torch

from labkit.algos.base import StepRecord
from labkit.algos.config import MultiTurnConfig
from labkit.algos.grpo import GRPOTrainer
from labkit.models.episode import episodes
from labkit.models.rollout import Rollout


class MultiTurnGRPOTrainer(GRPOTrainer):
    """``MultiTurnGRPOTrainer("tiny-tools", env=Calculator, reward_funcs=[tool_reward],
    task=CalcTask())``; ``env`` makes one environment (a class or any factory)."""

    config_class = MultiTurnConfig
    algorithm = "grpo-multiturn"

    def __init__(self, model="tiny-tools", env=None, reward_funcs=(), task=None, **kwargs):
        if env is None:
            raise ValueError(
                "env is missing: pass an environment factory (a class with reset() "
                "and tool methods), e.g. env=labkit.envs.Calculator"
            )
        self.env_factory, self.envs = env, []
        super().__init__(model, reward_funcs=reward_funcs, task=task, **kwargs)

    def extra_rewards(self) -> list:
        """The environment's ``get_reward()``, when it has one, after the user's rewards."""
        has_reward = callable(getattr(self.env_factory(), "get_reward", None))
        return [self._env_reward()] if has_reward else []

    def _env_reward(self):
        """The environments' ``get_reward()`` as a reward function (TRL's signature)."""

        def env_reward(completions, **columns):
            return [float(e.get_reward()) for e in self.envs]

        env_reward.__name__ = getattr(self.env_factory, "__name__", "env")
        env_reward.labkit_inline = True  # reads the environments' state: same process
        return env_reward

    def generate(self) -> Rollout:
        """G episodes for each of ``prompts_per_step`` prompts, one fresh environment each."""
        c = self.config
        examples = [
            e
            for e in self.task.sample_prompts(c.prompts_per_step, self.rng)
            for _ in range(c.num_generations)
        ]
        self.envs = [self.env_factory() for _ in examples]
        r = episodes(
            self.model,
            self.tokenizer,
            [e.prompt for e in examples],
            self.envs,
            columns=[{"prompt": e.prompt, "answer": e.answer} for e in examples],
            protocol=self.task.protocol,
            max_completion_length=c.max_completion_length,
            max_turns=c.max_turns,
            temperature=c.temperature,
            top_k=c.top_k,
            top_p=c.top_p,
            generator=self.generator,
            tool_timeout=c.tool_timeout,
        )
        r.examples = examples
        return r

    def prepare(self, r: Rollout) -> Rollout:
        """GRPO's prepare, then loss_mask *= env_mask and the reward credited to the last turn."""
        super().prepare(r)
        r.loss_mask = r.loss_mask * r.env_mask.to(r.loss_mask.dtype)  # [B, T]
        r.turn_rewards = [
            [0.0] * (len(t) - 1) + [x] for t, x in zip(r.turn_ends, r.rewards.tolist())
        ]
        return r

    def train_step(self) -> StepRecord:
        rec = super().train_step()
        r = self._last
        rec.metrics.update(episode_metrics(r))
        for i, row in enumerate(rec.samples):
            row.update(
                turns=len(r.turn_ends[i]),
                tool_calls=int(r.tool_calls[i]),
                tool_failures=r.tool_failures[i],
                cut=r.cut[i],
                episode=segments(r, i, self.tokenizer),
            )
        faults = Counter(f for fs in r.tool_failures for f in fs)
        for fault, n in faults.items():
            self.log_event("tool_failure", {"fault": fault, "count": n})
        return rec

    def collect(self) -> Rollout:
        self._last = super().collect()
        return self._last

    def loss(self, logp, batch):
        """GRPO's loss; the per-token view also gets who wrote each token and the loss mask."""
        loss, stats = super().loss(logp, batch)
        stats["per_token"].update(env_mask=batch.env_mask.bool(), loss_mask=batch.loss_mask)
        return loss, stats


def episode_metrics(r: Rollout) -> dict:
    """Tool and turn metrics of one batch of episodes (floats)."""
    B = len(r)
    calls = r.tool_calls.float()  # [B]
    turns = torch.tensor(
        [len(t) for t in r.turn_ends], dtype=torch.float, device=calls.device
    )  # [B]
    failed = sum(len(f) for f in r.tool_failures)
    policy = (r.completion_mask * r.env_mask).sum(-1).float()  # [B]
    return {
        "tools/call_rate": float((calls > 0).float().mean()),
        "tools/calls_per_episode": float(calls.mean()),
        "tools/failure_rate": failed / max(1.0, float(calls.sum())),
        "turns/mean": float(turns.mean()),
        "turns/cut_tokens": sum(c == "tokens" for c in r.cut) / B,
        "turns/cut_turns": sum(c == "turns" for c in r.cut) / B,
        "reward/per_turn": float((r.rewards / turns.clamp(min=1)).mean()),
        "len/policy": float(policy.mean()),
        "len/env": float((r.lengths.float() - policy).mean()),
    }


def segments(r: Rollout, i: int, tokenizer) -> list[list]:
    """Episode ``i`` as [text, writer] runs, writer "policy" or "env" (the browser's view)."""
    n = int(r.lengths[i])
    ids, who = r.completion_ids[i, :n].tolist(), r.env_mask[i, :n].tolist()
    out = []
    for t, w in zip(ids, who):
        name = "policy" if w else "env"
        text = tokenizer.decode([t], skip_special_tokens=True)
        if out and out[-1][1] == name:
            out[-1][0] += text
        else:
            out.append([text, name])
    return out
