"""What GRPO and PPO share: sample G completions per prompt, score and verify them, and the
reference policy's log-probs (steps 2-4 of a GRPO step; ARCHITECTURE.md).

:class:`SamplingTrainer` holds the reward functions as a :class:`~labkit.algos.scoring.RewardScorer`
(``self.scorer``), a frozen pi_ref (or, with LoRA, the model with its adapter disabled) and
the sampling settings of the config; :class:`~labkit.algos.grpo.GRPOTrainer` and
:class:`~labkit.algos.ppo.PPOTrainer` write their advantages and updates on it.
DAPO's dynamic sampling (2503.14476, sec. 3.2) is part of :meth:`SamplingTrainer.collect`.
"""

from __future__ import annotations

import dataclasses
import math

import torch

from labkit.algos.base import Trainer
from labkit.algos.config import GRPOConfig
from labkit.algos.dapo import informative_groups
from labkit.algos.scoring import RewardScorer, check_rewards
from labkit.algos.trl_call import trl_call
from labkit.models.policy import frozen_copy, is_peft
from labkit.models.rollout import Rollout, completion_logprobs, concat, rollout
from labkit.rewards.kwargs import TrainerState
from labkit.runs.records import group_correct
from labkit.tasks.base import max_completion_tokens


class SamplingTrainer(Trainer):
    """The base of the trainers that learn from their own samples: ``reward_funcs`` (TRL's
    signature, or built-in names) weighted by ``reward_weights``; ``track_kl`` keeps pi_ref
    (and logs KL to it) even at beta = 0. TRL's call is taken too (``args``, ``train_dataset``,
    ``eval_dataset``, ``processing_class``, ``peft_config``: :mod:`labkit.algos.trl_call`);
    ``verifier`` decides what is correct (:meth:`verify`)."""

    config_class = GRPOConfig

    def __init__(
        self,
        model="tiny",
        reward_funcs=("digit_partial",),
        task="addition",
        config: GRPOConfig | None = None,
        *,
        tokenizer=None,
        run_name: str | None = None,
        track_kl: bool = True,
        device=None,
        dtype=None,
        args=None,
        train_dataset=None,
        eval_dataset=None,
        processing_class=None,
        peft_config=None,
        verifier=None,
        **overrides,
    ):
        call = trl_call(  # TRL's call (args, train_dataset, ...) as labkit's arguments
            type(self),
            model,
            task,
            config,
            tokenizer=tokenizer,
            run_name=run_name,
            overrides=overrides,
            args=args,
            train_dataset=train_dataset,
            eval_dataset=eval_dataset,
            processing_class=processing_class,
            peft_config=peft_config,
            verifier=verifier,
        )
        self._given_rewards, self.track_kl = reward_funcs, track_kl
        self.verifier = call["verifier"]
        super().__init__(
            call["model"],
            call["task"],
            call["config"],
            call["tokenizer"],
            run_name=call["run_name"],
            device=device,
            dtype=dtype,
            **overrides,
        )

    def setup(self) -> None:
        funcs = self._given_rewards
        funcs = [funcs] if callable(funcs) or isinstance(funcs, str) else list(funcs)
        self.scorer = RewardScorer(funcs + self.extra_rewards(), self.config.reward_weights)
        if isinstance(self.verifier, str) and self.verifier not in self.scorer.names:
            raise ValueError(
                f"verifier={self.verifier!r} is not one of the reward functions "
                f"{self.scorer.names}: name one of them (correct where it gives > 0), or pass "
                "verifier=fn(completion, answer) -> bool"
            )
        wants_ref = self.config.beta > 0 or self.track_kl
        # LoRA: pi_ref is the same model with its adapter disabled, not a second copy
        self.adapter_ref = wants_ref and is_peft(self.model)
        self.ref_model = frozen_copy(self.model) if wants_ref and not self.adapter_ref else None

    def extra_rewards(self) -> list:
        """Reward functions the trainer adds to the user's (an environment's own reward)."""
        return []

    def extra_state(self) -> dict:
        """The task's state and the stateful reward functions' (a Lagrange multiplier)."""
        return {**super().extra_state(), "rewards": self.scorer.state_dict()}

    def load_extra_state(self, state: dict) -> None:
        super().load_extra_state(state)
        self.scorer.load_state_dict(state.get("rewards", {}))

    # -- configuration -------------------------------------------------------------------
    def run_config(self) -> dict:
        named = {"verifier": self.verifier} if isinstance(self.verifier, str) else {}
        return {
            **super().run_config(),
            "track_kl": self.track_kl,
            "reward_funcs": self.scorer.names,
            "reward_version": self.scorer.version,
            **named,
        }

    @classmethod
    def restore_kwargs(cls, run_dir, meta: dict) -> dict:
        return {
            **super().restore_kwargs(run_dir, meta),
            "reward_funcs": meta["reward_funcs"],
            "track_kl": meta.get("track_kl", True),
            "verifier": meta.get("verifier"),
        }

    def check_update(self, new) -> None:
        super().check_update(new)
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
            [f for f, _ in self.scorer.funcs] if "reward_weights" in changes else None
        )  # new weights only: the same functions
        checked = check_rewards(funcs, new.reward_weights) if funcs else None
        with self.lock:
            self.config = new
            self.apply_config()
            if checked:
                self.scorer.funcs = checked
            if reward_funcs:
                self.scorer.close()  # the old functions' workers go
                changes["reward_funcs"] = reward_funcs
            self.log_event("update", changes)

    def event_fields(self, changes: dict) -> dict:
        """Reward functions as names, and the reward version when they or weights change."""
        changes = super().event_fields(changes)
        if "reward_funcs" in changes:
            changes["reward_funcs"] = self.scorer.names
        if "reward_funcs" in changes or "reward_weights" in changes:
            changes["reward_version"] = self.scorer.version
        return changes

    @property
    def has_reference(self) -> bool:
        """True when pi_ref log-probs are computed (a frozen copy or the disabled adapter)."""
        return self.ref_model is not None or self.adapter_ref

    def postfix(self, m: dict) -> dict:
        acc = {} if math.isnan(m["accuracy"]) else {"acc": f"{m['accuracy']:.2f}"}
        return {"reward": f"{m['reward/mean']:.3f}", **acc}

    def trainer_state(self) -> TrainerState:
        """What ``trainer_state`` tells a reward function: steps done, the run's length, and
        epochs of the task's training prompts drawn (one step draws ``prompts_per_step``)."""
        c, n = self.config, len(getattr(self.task, "train", None) or [])
        per_epoch = n / c.prompts_per_step if n else 0.0
        return TrainerState(
            global_step=self.global_step,
            max_steps=c.max_steps,
            epoch=self.global_step / per_epoch if per_epoch else 0.0,
            num_train_epochs=c.max_steps / per_epoch if per_epoch else 0.0,
        )

    @property
    def max_len(self) -> int:
        """L_max: tokens sampled at most per completion (``max_completion_length``, or what the
        task needs). Dr. GRPO's constant divides by it (TRL: ``max_completion_length``), not by
        the batch's padded width, which would move with the longest completion of each batch."""
        return max_completion_tokens(self.task, self.config.max_completion_length)

    # -- generate -> score -> verify ---------------------------------------------------------
    @property
    def sampler(self) -> torch.nn.Module:
        """The policy that samples the completions: pi_theta itself (on-policy). Offline RFT
        (:class:`~labkit.algos.rft.OfflineRFTTrainer`) samples from the frozen pi_sft instead."""
        return self.model

    def generate(self) -> Rollout:
        """Sample G completions from :attr:`sampler` for each of ``prompts_per_step`` training
        prompts."""
        c = self.config
        examples = [
            e
            for e in self.task.sample_prompts(c.prompts_per_step, self.rng)
            for _ in range(c.num_generations)
        ]
        r = rollout(
            self.sampler,
            self.tokenizer,
            [e.prompt for e in examples],
            self.max_len,
            temperature=c.temperature,
            top_k=c.top_k,
            top_p=c.top_p,
            generator=self.generator,
            keep_sampling_mask=c.truncated_logprobs,
            keep_entropy=c.skip_zero_advantage,
        )
        r.examples = examples
        return r

    def score(self, r: Rollout) -> Rollout:
        """``r.rewards`` [B] and ``r.rewards_per_func`` from the reward functions; a function
        skipped under ``reward_errors="skip"`` leaves a ``reward_error`` event."""
        errors = self.scorer.score(
            r,
            self.task.columns(r.examples),
            self.config,
            completions=self.task.format_completions(r.completions),
            state=self.trainer_state(),
        )
        for name, err in errors.items():  # the step goes on without it
            self.log_event("reward_error", {"reward": name, "error": err})
        return r

    def collect(self) -> Rollout:
        """Generate and score. With ``dynamic_sampling`` (DAPO), keep only the groups whose
        rewards differ (the others have A = 0: no gradient), sampling again up to
        ``max_sampling_rounds`` times until ``prompts_per_step`` groups are kept; ``r.info``
        then has ``sampling/rounds`` and ``sampling/kept_frac`` (kept / sampled groups).
        Departure from DAPO, which samples without limit: after the last round the step trains
        on the groups kept (on the last batch, all A = 0, if none was)."""
        c, G = self.config, self.config.num_generations
        if not c.dynamic_sampling:
            return self.score(self.generate())
        parts, rounds, seen, kept = [], 0, 0, 0
        while kept < c.prompts_per_step and rounds < c.max_sampling_rounds:
            r = self.score(self.generate())
            rounds, seen = rounds + 1, seen + len(r) // G
            keep = informative_groups(r.rewards, G).nonzero().squeeze(-1)  # [n]
            if len(keep):
                parts.append(r.select(keep))
                kept += len(keep) // G
        info = {"sampling/rounds": rounds, "sampling/kept_frac": kept / seen}
        if parts:
            n = min(kept, c.prompts_per_step) * G
            r = concat(parts, self.tokenizer.pad_token_id).select(
                torch.arange(n, device=self.device)
            )
        r.info.update(info)
        return r

    def verify(self, r: Rollout) -> None:
        """``r.correct`` [B] from the verifier, and the task told (a curriculum). The verifier
        is ``verifier`` when given (a reward function's name: correct where it gives > 0; or
        ``fn(completion, answer) -> bool``), else the task's; a task with none (``verifies``
        False) leaves ``r.correct`` None, and the step reports no accuracy."""
        v = self.verifier
        if isinstance(v, str):
            r.correct = torch.tensor(r.rewards_per_func[v], device=self.device) > 0  # [B]
        elif callable(v):
            r.correct = torch.tensor(
                [bool(v(c, e.answer)) for c, e in zip(r.completions, r.examples)],
                device=self.device,
            )  # [B]
        elif self.task.verifies:
            r.correct = group_correct(self.task, r.completions, r.examples, self.device)  # [B]
        else:
            r.correct = None
        if r.correct is not None:
            self.task.observe(r.examples, r.correct)

    def loss_mask(self, r: Rollout) -> torch.Tensor:
        """[B, T] float: the completion tokens the loss counts; with
        ``mask_truncated_completions`` (DAPO's overlong filtering), none of a truncated one."""
        mask = r.completion_mask.float()  # [B, T]
        if self.config.mask_truncated_completions:  # DAPO (2503.14476) sec. 3.4
            mask = mask * (~r.truncated).float().unsqueeze(1)
        return mask

    @torch.no_grad()
    def reference_logprobs(self, r: Rollout) -> None:
        """``r.ref_logp`` [B, T]: log pi_ref of the completions, when there is a reference."""
        tau = self.config.temperature or 1.0
        if self.adapter_ref:
            with self.model.disable_adapter():
                r.ref_logp = completion_logprobs(self.model, r, tau)
        elif self.ref_model is not None:
            r.ref_logp = completion_logprobs(self.ref_model, r, tau)
