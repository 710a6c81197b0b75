"""Checkpoints of a run: save, resume (after a stop or a crash) and fork at a step.

``runs/<name>/checkpoints/step-000012/state.pt`` holds everything the next step depends on: the
model's and optimizer's state, the scheduler's step, the trainer's config and step, and the
random states (Python's ``random`` and the trainer's prompt sampler, torch's global generator and
the trainer's sampling generator), the task's state (a pass-rate sampler's counts) and the
stateful reward functions' (a Lagrange multiplier); the data a run trains on (DPO's and the
reward model's pairs, SFT's examples) is in ``runs/<name>/pairs.jsonl``. A checkpoint is written to a temporary folder and renamed, so a
process killed while saving leaves the previous one intact. With all of that restored, a
resumed run on CPU repeats an uninterrupted run's metrics exactly (tests/test_runs_resume.py).

A checkpoint is read onto the CPU first, so one saved on a GPU opens on a machine without one;
the trainer then moves each tensor to its own device. Only the sampling generator cannot cross
devices: a CPU generator's state (mt19937) and a CUDA one's (Philox seed and offset) are
different things, so a run resumed on another device type gets a fresh stream seeded by its seed
and step (a warning says so) and goes on, not bit for bit as it would have.

pi_ref is not saved while it is the starting policy: it is rebuilt from the model the run
started from (its ``model`` name in ``config.json``, or the ``model`` you pass). Once
``sync_ref_model`` has refreshed it (TR-DPO, ``labkit.algos.reference``) it is saved with the
trainer's extra state, and restored over the rebuilt one.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib
import random
import shutil
import warnings

import torch

from labkit.runs.log import RunLog, runs_root

STATE = "state.pt"


def folder(run_dir: pathlib.Path, step: int) -> pathlib.Path:
    return pathlib.Path(run_dir) / "checkpoints" / f"step-{step:06d}"


def steps(run_dir) -> list[int]:
    """Steps with a complete checkpoint in ``run_dir``, ascending."""
    root = pathlib.Path(run_dir) / "checkpoints"
    if not root.exists():
        return []
    return sorted(
        int(p.name[5:])
        for p in root.glob("step-*")
        if p.name[5:].isdigit() and (p / STATE).exists()
    )  # not a half-written .tmp


def save(trainer, run_dir, limit: int | None = None) -> pathlib.Path:
    """Write the trainer's state at its current step; keep the newest ``limit`` checkpoints."""
    state = {
        "step": trainer.global_step,
        "config": trainer.config.to_dict(),
        "model": trainer.model.state_dict(),
        "optimizer": trainer.optimizer.state_dict(),
        "scheduler": trainer.scheduler.state_dict(),
        "rng": trainer.rng.getstate(),
        "torch": torch.get_rng_state(),
        "generator": trainer.generator.get_state(),
        "generator_device": trainer.generator.device.type,
        "scaler": None if trainer.scaler is None else trainer.scaler.state_dict(),
        "python": random.getstate(),
        "extra": trainer.extra_state(),
    }
    dest = folder(run_dir, trainer.global_step)
    tmp = dest.with_name(dest.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    torch.save(state, tmp / STATE)
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    if limit is not None:
        for old in steps(run_dir)[:-limit]:
            shutil.rmtree(folder(run_dir, old), ignore_errors=True)
    return dest


def maybe_save(trainer, final: bool = False) -> None:
    """A checkpoint every ``config.save_steps`` steps of a named run (after the step is logged);
    ``final``: at the end of ``train()``, unless this step has one already."""
    c, path = trainer.config, trainer.log.path
    if path is None or not c.save_steps or trainer.global_step == 0:
        return
    due = trainer.global_step % c.save_steps == 0
    if (due and not final) or (final and trainer.global_step not in steps(path)):
        save(trainer, path, c.save_total_limit)


def load(trainer, run_dir, step: int) -> None:
    """Restore the trainer's state from the checkpoint of ``run_dir`` at ``step``."""
    state = read(run_dir, step)
    trainer.model.load_state_dict(state["model"])
    trainer.optimizer.load_state_dict(state["optimizer"])
    if state["scheduler"] is not None:  # None: saved without one (older DPO runs)
        trainer.scheduler.load_state_dict(state["scheduler"])
    trainer.rng.setstate(state["rng"])
    _restore_generator(trainer, state)
    if trainer.scaler is not None and state.get("scaler"):  # fp16: the loss scale goes on
        trainer.scaler.load_state_dict(state["scaler"])
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    trainer.global_step = state["step"]
    trainer.load_extra_state(state["extra"])


def read(run_dir, step: int) -> dict:
    """The checkpoint of ``run_dir`` at ``step``, its tensors on the CPU (module docstring)."""
    return torch.load(folder(run_dir, step) / STATE, map_location="cpu", weights_only=False)


def _restore_generator(trainer, state: dict) -> None:
    """The sampling generator's state, when it was saved on this device type; else a fresh
    stream from (seed, step), with a warning (module docstring)."""
    if state["generator"] is None:
        return
    here = trainer.generator.device.type
    saved = state.get("generator_device", here)  # older checkpoints: CPU runs only
    if saved == here:
        trainer.generator.set_state(state["generator"])
        return
    warnings.warn(
        f"the checkpoint at step {state['step']} was sampled on {saved}, this trainer samples "
        f"on {here}: their generators' states differ, so sampling goes on from a fresh stream "
        "seeded by (seed, step), not from the saved one (resume on the same device type to "
        "repeat the run exactly)",
        stacklevel=3,
    )
    trainer.generator.manual_seed(trainer.config.seed * 1_000_003 + state["step"])


def _locate(run) -> pathlib.Path:
    p = pathlib.Path(run)
    if not (p / "config.json").exists() and (runs_root() / p / "config.json").exists():
        p = runs_root() / p
    if not (p / "config.json").exists():
        raise FileNotFoundError(
            f"{p} is not a run folder (no config.json); runs live under {runs_root()}/<name>"
        )
    return p


def _pick_step(run_dir: pathlib.Path, step: int | None) -> int:
    have = steps(run_dir)
    if not have:
        raise FileNotFoundError(f"{run_dir} has no checkpoint: run with save_steps >= 1")
    if step is None:
        return have[-1]
    if step not in have:
        raise ValueError(
            f"step={step}: {run_dir} has checkpoints at steps {have}; pick one "
            "(save_total_limit=None keeps every checkpoint)"
        )
    return step


def _build(cls, run_dir, step, model, tokenizer, changes, run_name):
    """A trainer as it was at ``step`` (config from the checkpoint), with ``changes`` applied.

    ``changes`` holds config fields and constructor arguments (``reward_funcs``, ...); the
    constructor's other arguments come from ``cls.restore_kwargs(run_dir, meta)``.
    """
    meta = json.loads((run_dir / "config.json").read_text())
    state = read(run_dir, step)
    fields = {f.name for f in dataclasses.fields(cls.config_class)}
    config = cls.config_class(**{k: v for k, v in state["config"].items() if k in fields})
    if model is None:
        if meta.get("model") is None:
            raise ValueError(
                f"{run_dir} was trained on a model passed as an object: pass it "
                "again (model=..., tokenizer=...)"
            )
        model = meta["model"]
    if "task" in changes:  # a task passed again replaces the stored one: nothing to rebuild
        meta = {**meta, "task_kwargs": None}
    kwargs = {**cls.restore_kwargs(run_dir, meta), **changes}
    trainer = cls(model=model, config=config, tokenizer=tokenizer, run_name=run_name, **kwargs)
    load(trainer, run_dir, step)
    settings = {k: v for k, v in changes.items() if k in fields}
    if settings:  # the checkpoint restored the old schedule; apply the new values again
        trainer.config = dataclasses.replace(trainer.config, **settings)
        trainer.apply_config()
    return trainer


def _loggable(changes: dict) -> dict:
    """``changes`` for the events log: a ``torch.device`` (``device=``) as its name."""
    return {k: str(v) if isinstance(v, torch.device) else v for k, v in changes.items()}


def resume(cls, run, step, model, tokenizer, changes):
    """See :meth:`labkit.algos.base.Trainer.from_run`."""
    run_dir = _locate(run)
    step = _pick_step(run_dir, step)
    trainer = _build(cls, run_dir, step, model, tokenizer, changes, None)
    trainer.log = RunLog.reopen(run_dir, step)
    trainer.open_trackers(resume=True)  # the trackers go on from the step resumed at
    if changes:
        trainer.log_event("resume", _loggable(changes))
    return trainer


def fork(cls, run, step, run_name, model, tokenizer, changes):
    """See :meth:`labkit.algos.base.Trainer.fork`."""
    run_dir = _locate(run)
    step = _pick_step(run_dir, step)
    if (runs_root() / run_name).resolve() == run_dir.resolve():
        raise ValueError(f"run_name={run_name!r} is the parent run: give the branch a new name")
    trainer = _build(cls, run_dir, step, model, tokenizer, changes, run_name)
    trainer.log.config["parent"] = {"run": str(run_dir), "step": step}
    trainer.log.write_config()
    trainer.log.copy_from(RunLog.read(run_dir), step)
    trainer.log_event("fork", {"parent": run_dir.name, **_loggable(changes)})
    return trainer
