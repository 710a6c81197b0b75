"""The glass-box GRPO loop: sample, score, advantages, mu clipped updates, record everything.

One step (DeepSeekMath 2402.03300, Algorithm 1, with TRL's conventions):
  1. draw ``prompts_per_step`` prompts, sample G = ``num_generations`` completions each;
  2. score every completion with each reward function (TRL's signature), weighted sum;
  3. group advantages A_i = (r_i - mean_group) / (std_group + 1e-4)  (``scale_rewards``);
  4. ``num_iterations`` (mu) AdamW updates of ``labkit.core.policy_loss`` (clipped ratio to
     pi_old, + beta k3 to a frozen pi_ref when beta > 0);
  5. record metrics, every sample and per-token diagnostics into the run log.
Departures from TRL: prompts are sampled with replacement from the task's train split; a frozen
reference is also kept at beta = 0 when ``track_kl`` (KL is then logged, not optimised).
"""

from __future__ import annotations

import dataclasses
import random
import threading
import time

import torch
from tqdm.auto import tqdm

from labkit.config import GRPOConfig
from labkit.core import entropy_from_logits, group_advantages, policy_loss
from labkit.models import frozen_copy, load_policy
from labkit.records import group_correct, sample_rows, step_metrics, token_rows
from labkit.rewards import call_reward, get_reward, reward_name
from labkit.rollout import Batch, completion_logprobs, rollout
from labkit.runlog import RunLog, runs_root
from labkit.tasks import get_task
from labkit.utils import set_seed


def is_peft(model) -> bool:
    """True for a ``peft`` PeftModel (it can switch its adapter off: ``disable_adapter()``)."""
    return hasattr(model, "disable_adapter") and hasattr(model, "peft_config")


class GRPOTrainer:
    """``GRPOTrainer(model="tiny", reward_funcs=[...], task="addition", max_steps=100).train()``.

    ``model`` is a name for :func:`labkit.load_policy` or a model (then pass ``tokenizer``).
    Keyword overrides go to :class:`GRPOConfig`. ``run_name`` writes the log to
    ``runs/<run_name>/`` (``$LABKIT_RUNS`` moves the root); ``run_name=None`` keeps it in memory.
    """

    def __init__(self, model="tiny", reward_funcs=("digit_partial",), task="addition",
                 config: GRPOConfig | None = None, tokenizer=None, run_name: str | None = None,
                 track_kl: bool = True, **overrides):
        self.config = dataclasses.replace(config or GRPOConfig(), **overrides)
        set_seed(self.config.seed)
        if isinstance(model, str):
            model, tokenizer = load_policy(model)
        elif tokenizer is None:
            raise ValueError("model is a module: pass its tokenizer too (tokenizer=...)")
        self.model, self.tokenizer, self.task = model, tokenizer, get_task(task)
        self.reward_funcs = self._check_rewards(reward_funcs, self.config.reward_weights)
        wants_ref = self.config.beta > 0 or track_kl
        # LoRA: pi_ref is the same model with its adapter disabled, not a second copy
        self.adapter_ref = wants_ref and is_peft(model)
        self.ref_model = frozen_copy(model) if wants_ref and not self.adapter_ref else None
        self.params = [p for p in model.parameters() if p.requires_grad]  # LoRA: adapter only
        self.optimizer = torch.optim.AdamW(self.params, lr=self.config.learning_rate,
                                           weight_decay=self.config.weight_decay)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, self._lr_factor)
        self.rng = random.Random(self.config.seed)
        self.generator = torch.Generator().manual_seed(self.config.seed)
        path = runs_root() / run_name if run_name else None
        self.log = RunLog(path, {**self.config.to_dict(), "task": self.task.name,
                                 "reward_funcs": [reward_name(f) for f, _ in self.reward_funcs]})
        self.global_step = 0
        self.lock = threading.Lock()  # held during a step; swaps wait for the step boundary
        self.pause_event, self.stop_event = threading.Event(), threading.Event()

    # -- configuration -------------------------------------------------------------------
    @staticmethod
    def _check_rewards(funcs, weights):
        funcs = [get_reward(f) for f in ([funcs] if callable(funcs) or isinstance(funcs, str)
                                         else funcs)]
        if not funcs:
            raise ValueError("reward_funcs is empty: pass at least one reward function")
        weights = [1.0] * len(funcs) if weights is None else list(weights)
        if len(weights) != len(funcs):
            raise ValueError(f"reward_weights has {len(weights)} values for {len(funcs)} reward "
                             "functions: give one weight per function")
        return list(zip(funcs, weights))

    def _lr_factor(self, step: int) -> float:
        if self.config.lr_scheduler_type == "constant":
            return 1.0
        return max(0.0, 1.0 - step / self.config.max_steps)

    def update(self, reward_funcs=None, **changes) -> None:
        """Change hyperparameters (validated) or reward functions; applied between steps."""
        new = dataclasses.replace(self.config, **changes)  # __post_init__ refuses bad values
        if new.beta > 0 and not self.has_reference:
            raise ValueError("beta > 0 needs a reference model: create the trainer with "
                             "track_kl=True (the default) or beta > 0")
        rewards = self._check_rewards(reward_funcs, new.reward_weights) if reward_funcs else None
        with self.lock:
            self.config = new
            for g in self.optimizer.param_groups:
                g["lr"] = new.learning_rate * self._lr_factor(self.global_step)
            self.scheduler.base_lrs = [new.learning_rate] * len(self.optimizer.param_groups)
            if rewards:
                self.reward_funcs = rewards
            changed = dict(changes)
            if rewards:
                changed["reward_funcs"] = [reward_name(f) for f, _ in rewards]
            self.log.log("events", [{"step": self.global_step, "kind": "update", **changed}])

    @property
    def has_reference(self) -> bool:
        """True when pi_ref log-probs are computed (a frozen copy or the disabled adapter)."""
        return self.ref_model is not None or self.adapter_ref

    # -- one step ------------------------------------------------------------------------
    def generate(self):
        """Sample G completions for each of ``prompts_per_step`` training prompts."""
        c = self.config
        examples = [e for e in self.task.sample_prompts(c.prompts_per_step, self.rng)
                    for _ in range(c.num_generations)]
        max_len = c.max_completion_length or self.task.max_answer_chars + 1
        batch = rollout(self.model, self.tokenizer, [e.prompt for e in examples], max_len,
                        c.temperature, c.top_k, c.top_p, self.generator)
        return batch, examples

    def score(self, batch: Batch, examples) -> tuple[torch.Tensor, dict]:
        """Weighted sum of the reward functions ([B]) and each function's values by name."""
        columns = self.task.columns(examples)
        per_fn = {reward_name(f): call_reward(f, batch.completions, columns)
                  for f, _ in self.reward_funcs}
        r = torch.tensor([list(v) for v in per_fn.values()])  # [F, B], NaN where None
        w = torch.tensor([w for _, w in self.reward_funcs]).unsqueeze(1)  # [F, 1]
        return torch.nansum(r * w, 0), per_fn  # [B]

    @torch.no_grad()
    def _reference_logprobs(self, batch: Batch) -> None:
        t = self.config.temperature or 1.0
        if self.config.num_iterations > 1:
            batch.old_logp = completion_logprobs(self.model, batch, t)
        if self.adapter_ref:
            with self.model.disable_adapter():
                batch.ref_logp = completion_logprobs(self.model, batch, t)
        elif self.ref_model is not None:
            batch.ref_logp = completion_logprobs(self.ref_model, batch, t)

    def step(self) -> dict:
        """One GRPO step; returns its metrics (also appended to ``self.log``)."""
        with self.lock:
            return self._step()

    def _step(self) -> dict:
        c, t0 = self.config, time.perf_counter()
        batch, examples = self.generate()
        t_rollout = time.perf_counter() - t0
        rewards, per_fn = self.score(batch, examples)
        adv = group_advantages(rewards, c.num_generations, c.scale_rewards)  # [B]
        correct = group_correct(self.task, batch.completions, examples)  # [B]
        mask = batch.completion_mask.float()  # [B, T]
        if c.mask_truncated_completions:
            mask = mask * (~batch.truncated).float().unsqueeze(1)
        self._reference_logprobs(batch)
        self.model.train()
        for it in range(c.num_iterations):
            logp, logits = completion_logprobs(self.model, batch, c.temperature or 1.0, True)
            if batch.old_logp is None:  # mu = 1: pi_old is the current policy, ratio 1
                batch.old_logp = logp.detach()
            loss, stats = policy_loss(
                logp, batch.old_logp, adv, mask, c.loss_type, c.epsilon, c.epsilon_high,
                c.importance_sampling_level, batch.completion_ids.shape[1], batch.ref_logp,
                c.beta, c.kl_estimator)
            self.optimizer.zero_grad(set_to_none=True)
            loss.backward()
            grad_norm = torch.nn.utils.clip_grad_norm_(
                self.params, c.max_grad_norm if c.max_grad_norm > 0 else float("inf"))
            self.optimizer.step()
            if it == 0:
                first_stats, first_logp = stats, logp.detach()
                entropy = entropy_from_logits(logits.detach(), c.temperature or 1.0)  # [B, T]
                first_stats.update({"loss": loss.detach(), "grad_norm": grad_norm})
        lr = self.optimizer.param_groups[0]["lr"]
        self.scheduler.step()
        self.global_step += 1
        m = step_metrics(self.global_step, batch, rewards, per_fn, adv, correct, first_stats,
                         entropy, batch.completion_mask, c.num_generations)
        m.update({"lr": lr, "time/rollout": t_rollout, "time/step": time.perf_counter() - t0})
        self.log.log_step(
            m, sample_rows(self.global_step, batch, examples, rewards, per_fn, adv, correct,
                           c.num_generations),
            token_rows(self.global_step, batch, self.tokenizer, first_logp, adv, first_stats,
                       c.diagnostics))
        return m

    # -- the loop ------------------------------------------------------------------------
    def train(self, max_steps: int | None = None, progress: bool = True, callback=None):
        """Run until ``max_steps`` (default: the config's) or :meth:`stop`; returns the RunLog.

        ``callback(trainer, metrics)`` is called after every step (live plots use it).
        """
        end = self.config.max_steps if max_steps is None else self.global_step + max_steps
        bar = tqdm(total=end - self.global_step, desc="GRPO", disable=not progress)
        try:
            while self.global_step < end and not self.stop_event.is_set():
                if self.pause_event.is_set():
                    time.sleep(0.05)
                    continue
                m = self.step()
                bar.update(1)
                bar.set_postfix(reward=f"{m['reward/mean']:.3f}", acc=f"{m['accuracy']:.2f}")
                if callback is not None:
                    callback(self, m)
        finally:
            bar.close()
        return self.log

    def pause(self) -> None:
        self.pause_event.set()

    def resume(self) -> None:
        self.pause_event.clear()

    def stop(self) -> None:
        self.stop_event.set()
