"""The reward side of a sampling trainer (step 2 of a GRPO step): reward functions checked and
weighted, the runtime every call goes through, and the score of a rollout.

A :class:`RewardScorer` is a component the trainer holds (``trainer.scorer``); it reads nothing
of the trainer: the config's ``reward_*`` fields, the task's columns, the completions in the
prompts' format and the trainer's state come in as arguments. Each function gets what TRL 1.16
passes (``labkit.rewards.kwargs``): ``prompts``, ``completions``, ``completion_ids``, every
column, ``trainer_state``, ``log_extra`` (columns of the completion records:
``r.reward_logs``) and ``log_metric`` (scalars of the step: ``r.info``, mean over the step).

>>> scorer = RewardScorer(["exact_match", "digit_partial"], [1.0, 0.5])
>>> scorer.names, scorer.funcs[1][1]
(['exact_match', 'digit_partial'], 0.5)
"""

from __future__ import annotations

import torch

from labkit.algos.dapo import soft_overlong_penalty
from labkit.models.rollout import Rollout
from labkit.rewards import get_reward, reward_name
from labkit.rewards.kwargs import RewardLog, TrainerState
from labkit.rewards.runtime import RewardRunner, run_rewards, source_hash
from labkit.rewards.stateful import StatefulReward


def check_rewards(funcs, weights) -> list[tuple]:
    """``(fn, weight)`` pairs from reward functions (callables or built-in names) and weights
    (``None``: 1 each); refuses an empty list and a weight count that does not match."""
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


class RewardScorer:
    """``RewardScorer(funcs, weights)``: the checked ``(fn, weight)`` pairs (``funcs``), the
    :class:`~labkit.rewards.runtime.RewardRunner` every call goes through (built on first use,
    rebuilt when the runtime settings change) and :meth:`score`."""

    def __init__(self, funcs, weights=None):
        self.funcs = check_rewards(funcs, weights)
        self._runner: RewardRunner | None = None
        self._runner_key: tuple | None = None

    @property
    def names(self) -> list[str]:
        return [reward_name(f) for f, _ in self.funcs]

    @property
    def version(self) -> str:
        """Each reward function's name, source hash and weight: ``name@hash x w, ...``."""
        return ", ".join(f"{reward_name(f)}@{source_hash(f)} x{w:g}" for f, w in self.funcs)

    def runner(self, config) -> RewardRunner:
        """The runner for ``config``'s ``reward_timeout``, ``reward_runtime``,
        ``reward_workers`` and ``reward_errors``; the old one closes when they change."""
        key = (
            config.reward_timeout,
            config.reward_runtime,
            config.reward_workers,
            config.reward_errors,
        )
        if self._runner is None or self._runner_key != key:
            self.close()
            self._runner, self._runner_key = RewardRunner(*key), key
        return self._runner

    def state_dict(self) -> dict:
        """Each :class:`~labkit.rewards.stateful.StatefulReward`'s state, by its name (what a
        checkpoint keeps of the reward functions: a Lagrange multiplier)."""
        states = {}
        for f, _ in self.funcs:
            if isinstance(f, StatefulReward):
                if f.__name__ in states:
                    raise ValueError(
                        f"two stateful rewards are named {f.__name__!r}: give each its own name, "
                        "so a checkpoint can tell their states apart"
                    )
                states[f.__name__] = f.state_dict()
        return states

    def load_state_dict(self, states: dict) -> None:
        """Restore :meth:`state_dict` into the stateful rewards of the same names."""
        for f, _ in self.funcs:
            if isinstance(f, StatefulReward) and f.__name__ in states:
                f.load_state_dict(states[f.__name__])

    def close(self) -> None:
        """Stop the reward functions' worker processes (new ones start on the next call)."""
        if self._runner is not None:
            self._runner.close()

    def score(
        self,
        r: Rollout,
        columns: dict,
        config,
        *,
        completions: list | None = None,
        state: TrainerState | None = None,
    ) -> dict:
        """Fill ``r.rewards`` [B] (the weighted sum) and ``r.rewards_per_func`` (by name; with
        ``overlong_buffer``, DAPO's soft overlong punishment as ``overlong``); returns the
        errors of functions skipped under ``reward_errors="skip"``, by name. ``completions``:
        as the functions get them (default ``r.completions``; conversational prompts: one
        assistant message each); ``state``: the trainer's progress (``trainer_state``)."""
        log = RewardLog()
        kwargs = {
            **columns,
            "completion_ids": completion_id_lists(r),
            "trainer_state": state or TrainerState(),
            **log.callbacks(),
        }
        texts = r.completions if completions is None else completions
        per_fn, info, errors = run_rewards(self.runner(config), self.funcs, texts, kwargs)
        r.info.update(info)
        r.info.update(log.means())  # log_metric's names, as TRL logs them
        r.reward_logs = {k: v for k, v in log.extra.items() if len(v) == len(r)}
        dev = r.completion_ids.device
        values = torch.tensor([list(v) for v in per_fn.values()], device=dev)  # [F, B] NaN: None
        w = torch.tensor([w for _, w in self.funcs], device=dev).unsqueeze(1)  # [F, 1]
        total = torch.nansum(values * w, 0)  # [B]
        if config.overlong_buffer:  # DAPO (2503.14476) sec. 3.4, added to the reward
            pen = soft_overlong_penalty(
                r.lengths,
                config.max_completion_length,
                config.overlong_buffer,
                config.overlong_penalty,
            )  # [B]
            per_fn["overlong"] = pen.tolist()
            total = total + pen
        r.rewards, r.rewards_per_func = total, per_fn
        return errors


def completion_id_lists(r: Rollout) -> list[list[int]]:
    """Each completion's token ids up to and including eos, no padding (TRL's
    ``completion_ids``), read in one host sync."""
    host = torch.cat([r.completion_ids, r.lengths[:, None]], 1).tolist()  # [B, T + 1]
    return [row[: row[-1]] for row in host]
