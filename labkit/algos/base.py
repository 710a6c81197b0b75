"""The one Trainer every algorithm subclasses: what they share is written here once.

A trainer owns the policy and tokenizer, the task, the seed and random state, the device, the
optimizer (AdamW) and its schedule, the one optimizer step (zero_grad, backward, clip, step,
grad norm recorded), the run log, checkpoints (``from_run``, ``fork``), ``update`` between
steps, ``pause``/``resume``/``stop`` from another thread and the progress bar. A subclass
writes only its own step (:meth:`Trainer.train_step`) and, where it has them, its hooks:
:meth:`setup` (reference model, heads, data), :meth:`param_groups`, :meth:`run_config`,
:meth:`restore_kwargs` (what ``from_run`` passes back to the constructor).

One step (:meth:`Trainer.step`): ``train_step()`` -> :class:`StepRecord` (metrics, sample rows,
token rows) -> the schedule steps -> pi_ref refreshed when due (``sync_ref_model``, TR-DPO:
:mod:`labkit.algos.reference`) -> ``step``, ``lr``, ``time/step`` added -> the run log -> a
checkpoint every ``save_steps``.
"""

from __future__ import annotations

import dataclasses
import math
import random
import threading
import time
from dataclasses import dataclass, field
from typing import ClassVar

import torch
from tqdm.auto import tqdm

from labkit.algos.config import TrainConfig
from labkit.algos.reference import ReferenceSync, check_ref_sync
from labkit.models.device import autocast, choose_precision, grad_scaler, resolve_device
from labkit.models.memory import memory_report, out_of_memory_error
from labkit.models.policy import enable_gradient_checkpointing, load_policy
from labkit.runs import checkpoint
from labkit.runs.log import RunLog, runs_root
from labkit.runs.trackers import trackers
from labkit.tasks import get_task, saved_task
from labkit.utils import set_seed

OUT_OF_MEMORY = getattr(torch, "OutOfMemoryError", None) or torch.cuda.OutOfMemoryError
"""The allocator's out-of-memory error (``torch.OutOfMemoryError`` from torch 2.5 on)."""


@dataclass
class StepRecord:
    """What one step leaves in the run log: its metrics (without ``step``, ``lr``,
    ``time/step``, which the base adds), one row per sample and per-token rows."""

    metrics: dict
    samples: list[dict] = field(default_factory=list)
    tokens: list[dict] = field(default_factory=list)


def lr_factor(step: int, c: TrainConfig) -> float:
    """The learning-rate multiplier at ``step`` (0-based): linear warm-up over
    ``warmup_steps``, then ``constant``, ``linear`` or ``cosine`` decay to 0 at ``max_steps``.

    >>> c = TrainConfig(max_steps=10, warmup_steps=2, lr_scheduler_type="cosine")
    >>> [round(lr_factor(s, c), 2) for s in (0, 1, 2, 6, 10)]
    [0.5, 1.0, 1.0, 0.5, 0.0]
    >>> lr_factor(5, TrainConfig(max_steps=10))  # linear, no warm-up
    0.5
    """
    if step < c.warmup_steps:
        return (step + 1) / c.warmup_steps
    if c.lr_scheduler_type == "constant":
        return 1.0
    done = min(1.0, (step - c.warmup_steps) / max(1, c.max_steps - c.warmup_steps))
    if c.lr_scheduler_type == "linear":
        return max(0.0, 1.0 - done)
    return 0.5 * (1.0 + math.cos(math.pi * done))


class Trainer:
    """The base of every trainer: ``Trainer(model, task=..., run_name=..., **config_fields)``.

    ``model`` is a name for :func:`labkit.load_policy` or a module (then pass ``tokenizer``).
    Keyword overrides go to the config (``config_class``), validated before any work.
    ``run_name`` writes the log to ``runs/<run_name>/`` (``$LABKIT_RUNS`` moves the root);
    ``None`` keeps it in memory. ``device``, ``dtype``: where and in what precision the model is
    placed, once (default: as it is; ``device="auto"``: cuda, then mps, then cpu). Every tensor
    of a step is created on the model's device; ``precision`` (config) picks the autocast.
    """

    config_class: ClassVar[type] = TrainConfig
    algorithm: ClassVar[str] = "train"
    fused_adamw: ClassVar[bool] = True  # one kernel, ~5x faster on CPU; rounds differently
    keeps_initial_policy: ClassVar[bool] = False
    """Keep pi_0 once ``sync_ref_model`` moves pi_ref off it (``ref_sync.init_model``)."""
    ref_model: torch.nn.Module | None = None
    """pi_ref where the algorithm keeps a frozen copy of its own (GRPO, PPO, DPO: set in
    :meth:`setup`); None without one (LoRA takes pi_ref from the adapter switched off)."""

    def __init__(
        self,
        model="tiny",
        task="addition",
        config=None,
        tokenizer=None,
        *,
        run_name: str | None = None,
        device=None,
        dtype=None,
        **overrides,
    ):
        self.config = dataclasses.replace(config or self.config_class(), **overrides)
        set_seed(self.config.seed)
        self.model_name = model if isinstance(model, str) else None  # a resumed run reloads it
        self.model, self.tokenizer = self.load_model(model, tokenizer)
        if device is not None or dtype is not None:  # placed once; every tensor follows it
            self.model.to(device=resolve_device(device, self.model), dtype=dtype)
        if self.config.gradient_checkpointing:
            enable_gradient_checkpointing(self.model)
        first = next(self.model.parameters())
        self.device, self.dtype = first.device, first.dtype
        self.precision = choose_precision(self.device, self.config.precision)
        self.scaler = grad_scaler(self.device, self.precision)  # fp16 only
        self.task = None if task is None else get_task(task)
        if self.task is not None:  # chat messages rendered with the policy's chat template
            self.task.use_tokenizer(self.tokenizer)
        self.rng = random.Random(self.config.seed)  # the prompt / pair sampler
        self.generator = torch.Generator(self.device).manual_seed(self.config.seed)  # sampling
        self.ref_sync = ReferenceSync(self.keeps_initial_policy)  # TR-DPO's refresh of pi_ref
        self.setup()
        check_ref_sync(self.config, self.ref_model, self.model)
        groups = self.param_groups()
        self.params = [p for g in groups for p in g]
        self.optimizer = torch.optim.AdamW(
            [{"params": g, "lr": lr} for g, lr in zip(groups, self.group_lrs())],
            weight_decay=self.config.weight_decay,
            fused=self.fused_adamw,
        )
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: lr_factor(s, self.config)
        )
        self.log = RunLog(runs_root() / run_name if run_name else None, self.run_config())
        self.open_trackers()
        self.global_step = 0
        self.lock = threading.Lock()  # held during a step; swaps wait for the step boundary
        self.pause_event, self.stop_event = threading.Event(), threading.Event()
        self.on_log_ready()

    # -- hooks a subclass may override ---------------------------------------------------
    def load_model(self, model, tokenizer):
        """``(model, tokenizer)`` from a name or a module."""
        if isinstance(model, str):
            loaded, own = load_policy(model)
            return loaded, tokenizer or own  # TRL's processing_class may replace its own
        if tokenizer is None:
            raise ValueError("model is a module: pass its tokenizer too (tokenizer=...)")
        return model, tokenizer

    def setup(self) -> None:
        """Build what the step needs before the optimizer exists (reference model, heads)."""

    def on_log_ready(self) -> None:
        """Called once the run log exists (write data files beside it)."""

    def open_trackers(self, resume: bool = False) -> None:
        """Add the config's ``report_to`` trackers to the run log (``labkit.runs.trackers``);
        a run in memory gets a name of its own there (``labkit-<time>``)."""
        name = self.log.name if self.log.path else time.strftime("labkit-%Y%m%d-%H%M%S")
        self.log.sinks = trackers(
            self.config.report_to,
            run_dir=self.log.path,
            run_name=name,
            project=self.config.project,
            config=self.run_config(),
            resume=resume,
        )

    def param_groups(self) -> list[list]:
        """The parameters of each optimizer group: the model's trainable ones (LoRA: the
        adapter only)."""
        return [[p for p in self.model.parameters() if p.requires_grad]]

    def group_lrs(self) -> list[float]:
        """The learning rate of each group under the current config."""
        return [self.config.learning_rate]

    def run_config(self) -> dict:
        """What ``config.json`` holds: the config, and what is needed to rebuild the trainer
        (the task's name and, when it has them, its ``task_kwargs``: :meth:`Task.spec`)."""
        meta = {
            **self.config.to_dict(),
            "algorithm": self.algorithm,
            "task": None if self.task is None else self.task.name,
            "model": self.model_name,
        }
        if self.task is not None and self.task.spec():
            meta["task_kwargs"] = self.task.spec()
        return meta

    @classmethod
    def restore_kwargs(cls, run_dir, meta: dict) -> dict:
        """Constructor arguments (beyond model, config, run_name) to rebuild a run's trainer."""
        return {"task": saved_task(meta)}

    def train_step(self) -> StepRecord:
        """One step of the algorithm: sample or draw data, optimise, return what to record."""
        raise NotImplementedError

    def extra_state(self) -> dict:
        """State beyond model and optimizer for checkpoints: the task's (a pass-rate sampler's
        counts, :meth:`Task.state_dict`) and pi_ref once a refresh moved it; a subclass adds
        its own (a value head, ...)."""
        task = {} if self.task is None else {"task": self.task.state_dict()}
        return {**task, **self.ref_sync.state_dict(self.ref_model)}

    def load_extra_state(self, state: dict) -> None:
        """Restore :meth:`extra_state` (a checkpoint may hold no task state: nothing to restore)."""
        if self.task is not None and "task" in state:
            self.task.load_state_dict(state["task"])
        self.ref_sync.load_state_dict(state, self.ref_model)

    def check_update(self, new) -> None:
        """Refuse a config change the trainer cannot apply between steps (raise ValueError)."""
        check_ref_sync(new, self.ref_model, self.model)

    def postfix(self, m: dict) -> dict:
        """The progress bar's numbers."""
        return {"loss": f"{m['loss']:.3f}"} if "loss" in m else {}

    # -- the shared step -------------------------------------------------------------------
    def optimizer_step(self, loss: torch.Tensor) -> torch.Tensor:
        """zero_grad, backward, clip to ``max_grad_norm`` (0: off), step; the grad norm."""
        self.optimizer.zero_grad(set_to_none=True)
        limit = self.config.max_grad_norm if self.config.max_grad_norm > 0 else float("inf")
        if self.scaler is not None:  # fp16: scale the loss, unscale before clipping
            self.scaler.scale(loss).backward()
            self.scaler.unscale_(self.optimizer)
            grad_norm = torch.nn.utils.clip_grad_norm_(self.params, limit)
            self.scaler.step(self.optimizer)  # skipped when a gradient is inf/NaN
            self.scaler.update()
            return grad_norm
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(self.params, limit)
        self.optimizer.step()
        return grad_norm

    def step(self) -> dict:
        """One step; returns its metrics (also appended to ``self.log``)."""
        with self.lock:
            t0 = time.perf_counter()
            try:
                with autocast(self.device, self.precision):
                    record = self.train_step()
            except OUT_OF_MEMORY as e:  # a clear message instead of the allocator's
                raise out_of_memory_error(self) from e
            lr = self.optimizer.param_groups[0]["lr"]  # the rate this step used
            self.scheduler.step()
            self.global_step += 1
            s = self.global_step
            self.ref_sync.after_step(s, self.config, self.ref_model, self.model)  # TRL: on_step_end
            m = {"step": s, **record.metrics, "lr": lr}
            if getattr(self.config, "sync_ref_model", False):
                m["ref/refreshes"] = self.ref_sync.refreshes
            m["time/step"] = time.perf_counter() - t0
            self.log.log_step(
                m,
                [{"step": s, **r} for r in record.samples],
                [{"step": s, **r} for r in record.tokens],
            )
            checkpoint.maybe_save(self)
            return m

    def train(self, max_steps: int | None = None, progress: bool = True, callback=None) -> RunLog:
        """Run until ``max_steps`` more steps (default: up to the config's) or :meth:`stop`;
        returns the RunLog. ``callback(trainer, metrics)`` is called after every step."""
        end = self.config.max_steps if max_steps is None else self.global_step + max_steps
        if self.device.type != "cpu" and self.global_step == 0 and progress:
            print(memory_report(self))  # "this config needs ~X GB; you have Y GB; try ..."
        bar = tqdm(
            total=max(0, end - self.global_step), desc=self.algorithm.upper(), disable=not progress
        )
        try:
            while self.global_step < end and not self.stop_event.is_set():
                if self.pause_event.is_set():
                    time.sleep(0.05)
                    continue
                m = self.step()
                bar.update(1)
                bar.set_postfix(self.postfix(m))
                if callback is not None:
                    callback(self, m)
            checkpoint.maybe_save(self, final=True)  # done or stopped: resumable from here
        finally:
            bar.close()
            self.log.flush_trackers()
        return self.log

    def pause(self) -> None:
        self.pause_event.set()

    def resume(self) -> None:
        self.pause_event.clear()

    def stop(self) -> None:
        self.stop_event.set()

    # -- changes between steps -------------------------------------------------------------
    def update(self, **changes) -> None:
        """Change hyperparameters (validated), applied between steps; logged as an event."""
        new = dataclasses.replace(self.config, **changes)  # __post_init__ refuses bad values
        self.check_update(new)
        with self.lock:
            self.config = new
            self.apply_config()
            self.log_event("update", dict(changes))

    def apply_config(self) -> None:
        """Push ``self.config``'s learning rates into the optimizer and the schedule."""
        lrs = self.group_lrs()
        if choose_precision(self.device, self.config.precision) != self.precision:
            self.precision = choose_precision(self.device, self.config.precision)
            self.scaler = grad_scaler(self.device, self.precision)
        for g, lr in zip(self.optimizer.param_groups, lrs):
            g["lr"] = lr * lr_factor(self.global_step, self.config)
        self.scheduler.base_lrs = lrs

    def log_event(self, kind: str, changes: dict) -> None:
        """An ``events`` row: what changed, after which step (figures mark it)."""
        changes = self.event_fields(changes)
        self.log.log("events", [{"step": self.global_step, "kind": kind, **changes}])

    def event_fields(self, changes: dict) -> dict:
        """``changes`` as an event row records them: objects by name (a Task passed to
        ``from_run``/``fork``: its name). A subclass adds its own (reward functions)."""
        if hasattr(changes.get("task"), "name"):
            return {**changes, "task": changes["task"].name}
        return dict(changes)

    # -- checkpoints -----------------------------------------------------------------------
    @classmethod
    def from_run(cls, run, step: int | None = None, model=None, tokenizer=None, **changes):
        """Resume the run ``run`` (a name or folder) from its checkpoint at ``step`` (default:
        the last); the log keeps what was written up to that step and goes on from there."""
        return checkpoint.resume(cls, run, step, model, tokenizer, changes)

    @classmethod
    def fork(cls, run, step: int, run_name: str, model=None, tokenizer=None, **changes):
        """A new run ``run_name`` that starts from ``run``'s checkpoint at ``step`` with changed
        settings; its log starts with the parent's first ``step`` steps, so both branches
        overlay in :func:`labkit.compare_runs`."""
        return checkpoint.fork(cls, run, step, run_name, model, tokenizer, changes)
