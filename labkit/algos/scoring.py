"""The reward side of a sampling trainer: reward functions checked and weighted, the runtime
every call goes through, and the score of a rollout (step 2 of a GRPO step).

:class:`RewardScoring` is a mixin of :class:`~labkit.algos.grpo.GRPOTrainer` (and so of PPO,
multi-turn and process-supervised GRPO). It reads the trainer's ``reward_funcs`` (checked into
``(fn, weight)`` pairs by :meth:`~RewardScoring.setup_rewards`), ``task`` and the config's
``reward_*`` fields, ``overlong_buffer`` and ``overlong_penalty``.

>>> RewardScoring._check_rewards(["exact_match", "digit_partial"], [1.0, 0.5])[1][1]
0.5
"""

from __future__ import annotations

import torch

from labkit.algos.dapo import soft_overlong_penalty
from labkit.models.rollout import Rollout
from labkit.rewards import get_reward, reward_name
from labkit.rewards.runtime import RewardRunner, run_rewards, source_hash


class RewardScoring:
    """Reward functions, their runner and :meth:`score`; a mixin before
    :class:`~labkit.algos.base.Trainer` (its ``log_event`` adds the reward version)."""

    def setup_rewards(self) -> None:
        """Check ``reward_funcs`` against ``reward_weights``; the runner is built on first use."""
        self.reward_funcs = self._check_rewards(self.reward_funcs, self.config.reward_weights)
        self._runner: RewardRunner | None = None  # built on first use (reward_runner)
        self._runner_key: tuple | None = None

    @staticmethod
    def _check_rewards(funcs, weights):
        funcs = [
            get_reward(f) for f in ([funcs] if callable(funcs) or isinstance(funcs, str) else funcs)
        ]
        if not funcs:
            raise ValueError("reward_funcs is empty: pass at least one reward function")
        weights = [1.0] * len(funcs) if weights is None else list(weights)
        if len(weights) != len(funcs):
            raise ValueError(
                f"reward_weights has {len(weights)} values for {len(funcs)} reward "
                "functions: give one weight per function"
            )
        return list(zip(funcs, weights))

    def reward_run_config(self) -> dict:
        """The reward part of ``run_config()``: the functions' names and their version."""
        return {
            "reward_funcs": [reward_name(f) for f, _ in self.reward_funcs],
            "reward_version": self.reward_version,
        }

    @property
    def reward_version(self) -> str:
        """Each reward function's name, source hash and weight: ``name@hash x w, ...``."""
        return ", ".join(f"{reward_name(f)}@{source_hash(f)} x{w:g}" for f, w in self.reward_funcs)

    def log_event(self, kind: str, changes: dict) -> None:
        if "reward_funcs" in changes:  # names, not function objects
            changes = {**changes, "reward_funcs": [reward_name(f) for f, _ in self.reward_funcs]}
        if "reward_funcs" in changes or "reward_weights" in changes:
            changes = {**changes, "reward_version": self.reward_version}
        super().log_event(kind, changes)

    @property
    def reward_runner(self) -> RewardRunner:
        """The runner every reward call goes through (``labkit.rewards.runtime``), rebuilt when
        ``reward_timeout``, ``reward_runtime``, ``reward_workers`` or ``reward_errors`` change."""
        c = self.config
        key = (c.reward_timeout, c.reward_runtime, c.reward_workers, c.reward_errors)
        if self._runner is None or self._runner_key != key:
            if self._runner is not None:
                self._runner.close()
            self._runner, self._runner_key = RewardRunner(*key), key
        return self._runner

    def close_reward_workers(self) -> None:
        """Stop the reward functions' worker processes (new ones start on the next call):
        after the functions change, the old ones' workers go."""
        if self._runner is not None:
            self._runner.close()

    def score(self, r: Rollout) -> Rollout:
        """Fill ``r.rewards`` [B] (the weighted sum) and ``r.rewards_per_func`` (by name; with
        ``overlong_buffer``, DAPO's soft overlong punishment as ``overlong``)."""
        c = self.config
        columns = self.task.columns(r.examples)
        per_fn, info, errors = run_rewards(
            self.reward_runner, self.reward_funcs, r.completions, columns
        )
        r.info.update(info)
        for name, err in errors.items():  # reward_errors='skip': the step goes on without it
            self.log_event("reward_error", {"reward": name, "error": err})
        dev = r.completion_ids.device
        values = torch.tensor([list(v) for v in per_fn.values()], device=dev)  # [F, B] NaN: None
        w = torch.tensor([w for _, w in self.reward_funcs], device=dev).unsqueeze(1)  # [F, 1]
        total = torch.nansum(values * w, 0)  # [B]
        if c.overlong_buffer:
            pen = soft_overlong_penalty(
                r.lengths, c.max_completion_length, c.overlong_buffer, c.overlong_penalty
            )  # [B]
            per_fn["overlong"] = pen.tolist()
            total = total + pen
        r.rewards, r.rewards_per_func = total, per_fn
        return r
