"""A TRL ``GRPOConfig`` read field by field into labkit's config (``lk.GRPOTrainer(args=...)``).

Every field of TRL's config (read by name: trl is not imported here) is in one of five places:

- ``SAME``: the same name and meaning in labkit (``num_generations``, ``beta``, ``loss_type``, ...);
- ``RENAMED``: labkit's name for the same thing (``off_policy_mask_threshold`` -> ``off_policy_mask``);
- derived (:func:`derived`): ``prompts_per_step`` from the generation batch, ``max_steps`` from
  ``max_steps`` or the epochs, ``ref_model_sync_steps`` from TRL's (optimizer steps),
  ``precision`` from ``bf16``/``fp16``, checkpoints, trackers, run name;
- ``REFUSED``: changes what is trained and labkit has no such thing: away from TRL's default, a
  ``ValueError`` naming the field and what labkit does instead;
- everything else (logging, hub, distributed settings): no effect on one device; away from TRL's
  default it is named in one warning, with ``NOTES``' word on it where there is one.

One labkit step samples ``prompts_per_step`` x ``num_generations`` completions and makes
``num_iterations`` optimizer steps on all of them; TRL counts optimizer steps, so its
``max_steps`` and ``ref_model_sync_steps`` are labkit's x ``num_iterations``
(``labkit.integrations.trl_bridge.trl_kwargs`` is the other direction).
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
import warnings

from labkit.core.options import TRACKERS

SAME = (
    "num_generations",
    "max_completion_length",
    "temperature",
    "top_k",
    "top_p",
    "beta",
    "epsilon",
    "epsilon_high",
    "num_iterations",
    "loss_type",
    "scale_rewards",
    "importance_sampling_level",
    "mask_truncated_completions",
    "reward_weights",
    "entropy_coef",
    "learning_rate",
    "weight_decay",
    "max_grad_norm",
    "seed",
    "save_total_limit",
    "sync_ref_model",
    "ref_model_mixup_alpha",
)
"""TRL fields labkit has under the same name, with the same meaning."""

RENAMED = {"off_policy_mask_threshold": "off_policy_mask"}
"""TRL's name -> labkit's, same meaning."""

REFUSED = {
    "use_vllm": "labkit samples with its own KV-cache loop on one device",
    "multi_objective_aggregation": "labkit sums the weighted rewards, then normalises (TRL's "
    "'sum_then_normalize')",
    "delta": "labkit clips the ratio to [1 - epsilon, 1 + epsilon_high] only",
    "top_entropy_quantile": "every completion token counts in the loss",
    "use_adaptive_entropy": "entropy_coef is a constant",
    "min_p": "labkit samples with temperature, top_k and top_p",
    "repetition_penalty": "labkit samples with temperature, top_k and top_p",
    "generation_kwargs": "labkit samples with temperature, top_k and top_p",
    "use_bias_correction_kl": "labkit's KL term is always the IS-corrected one (TRL's default)",
    "lr_scheduler_kwargs": "labkit's schedules take no arguments",
    "optim": "labkit's optimizer is torch's AdamW",
    "adam_beta1": "labkit's AdamW uses torch's betas (0.9, 0.999)",
    "adam_beta2": "labkit's AdamW uses torch's betas (0.9, 0.999)",
    "adam_epsilon": "labkit's AdamW uses torch's eps 1e-8",
}
"""TRL fields whose non-default value changes the training and that labkit lacks: what labkit
does instead (the error message). ``steps_per_generation`` is checked in :func:`derived`."""

NOTES = {
    "log_completions": "labkit records every completion of every step (run.samples)",
    "num_completions_to_print": "labkit records every completion (run.samples; the dashboard)",
    "logging_steps": "labkit logs every step",
    "eval_strategy": "labkit does not evaluate during training: lk.accuracy(...) on "
    "trainer.task.heldout",
    "num_generations_eval": "labkit does not evaluate during training",
    "push_to_hub": "labkit writes runs/<run_name>/ (and checkpoints with a run_name) only",
    "disable_dropout": "labkit keeps the model as it is (tiny and SmolLM2 have no dropout)",
    "cast_lm_head_to_fp32": "labkit computes the loss's log-probs in fp32 anyway",
    "shuffle_dataset": "labkit draws prompts uniformly with replacement",
    "torch_compile": "labkit does not compile the model",
}
"""What labkit does instead, for fields that are named in the warning."""

QUIET = {"output_dir", "run_name", "report_to", "project", "bf16", "fp16", "save_strategy"}
QUIET |= {"save_steps", "max_steps", "num_train_epochs", "per_device_train_batch_size"}
QUIET |= {"lr_scheduler_type", "warmup_steps", "gradient_checkpointing"}
QUIET |= {"activation_checkpointing", "gradient_accumulation_steps", "steps_per_generation"}
QUIET |= {"generation_batch_size", "vllm_importance_sampling_correction", "remove_unused_columns"}
QUIET |= {"use_cpu", "disable_tqdm", "accelerator_config", "dataloader_pin_memory", "debug"}
QUIET |= {"pad_to_multiple_of", "chat_template_kwargs", "ref_model_sync_steps"}
"""Fields read by :func:`derived` or the dataset, set by TRL's own ``__post_init__``, or
harmless here (TRL applies TIS to vLLM generations only)."""

ONE_STEP = (
    "one labkit step makes num_iterations optimizer steps on the whole generation batch; set "
    "steps_per_generation = gradient_accumulation_steps (TRL's default), or raise num_iterations"
)

SCHEDULES = {"linear": "linear", "cosine": "cosine", "constant": "constant"}
SCHEDULES["constant_with_warmup"] = "constant"  # labkit's warm-up precedes every schedule


def _value(v):
    """An enum's value (TRL's ``SchedulerType.LINEAR``), else ``v``."""
    return getattr(v, "value", v)


def _defaults(args) -> dict:
    """TRL's defaults for ``args``'s class (dataclass field defaults)."""
    out = {}
    for f in dataclasses.fields(args):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


def is_trl_args(obj) -> bool:
    """True for a TRL (or transformers) training-arguments object, read by its fields."""
    return dataclasses.is_dataclass(obj) and hasattr(obj, "per_device_train_batch_size")


def from_trl_args(args, config_class, *, train_size: int) -> tuple[dict, dict]:
    """``(fields, trainer)`` for ``config_class`` from TRL's ``args``: ``fields`` the config's
    values, ``trainer`` the trainer's own arguments (``run_name``). ``train_size``: training
    prompts, for ``max_steps`` from ``num_train_epochs``. Raises on a ``REFUSED`` field away
    from its default; warns once about the others that labkit ignores."""
    defaults, known = _defaults(args), {f.name for f in dataclasses.fields(config_class)}
    changed = {
        f.name
        for f in dataclasses.fields(args)
        if f.name in defaults and _value(getattr(args, f.name)) != _value(defaults[f.name])
    }
    for name in sorted(changed & set(REFUSED)):
        raise ValueError(
            f"trl.GRPOConfig field {name}={getattr(args, name)!r} has no labkit counterpart: "
            f"{REFUSED[name]}. Leave it at TRL's default ({defaults[name]!r}) to run in labkit, "
            "or run this config in TRL"
        )
    fields = {name: getattr(args, name) for name in SAME if name in known}
    fields.update({new: getattr(args, old) for old, new in RENAMED.items() if new in known})
    fields.update(derived(args, train_size))
    ignored = sorted(changed - set(SAME) - set(RENAMED) - set(REFUSED) - QUIET)
    if ignored:
        said = [
            f"{n}={getattr(args, n)!r}" + (f" ({NOTES[n]})" if NOTES.get(n) else "")
            for n in ignored
        ]
        warnings.warn(
            "trl.GRPOConfig fields with no effect in labkit's one-device loop: " + "; ".join(said),
            stacklevel=3,
        )
    return fields, {"run_name": trl_run_name(args, defaults)}


def derived(args, train_size: int) -> dict:
    """labkit's fields that TRL spreads over several of its own (module docstring)."""
    G, mu = args.num_generations, args.num_iterations
    per_step = args.per_device_train_batch_size * args.gradient_accumulation_steps
    if getattr(args, "steps_per_generation", None) not in (None, args.gradient_accumulation_steps):
        raise ValueError(
            f"trl.GRPOConfig field steps_per_generation={args.steps_per_generation!r} "
            f"(gradient_accumulation_steps={args.gradient_accumulation_steps}): {ONE_STEP}"
        )
    if per_step % G:
        raise ValueError(
            f"per_device_train_batch_size x gradient_accumulation_steps = {per_step} is not a "
            f"multiple of num_generations={G}: each prompt's group must be whole; change one"
        )
    prompts = per_step // G
    sync = args.ref_model_sync_steps  # TRL refreshes pi_ref after optimizer steps tau, 2 tau, ...
    if args.sync_ref_model and sync % mu:
        raise ValueError(
            f"trl.GRPOConfig field ref_model_sync_steps={sync} with num_iterations={mu}: TRL "
            "counts optimizer steps and one labkit step makes num_iterations of them, so a "
            "refresh would fall inside a labkit step; use a multiple of num_iterations"
        )
    if args.max_steps and args.max_steps > 0:
        steps = math.ceil(args.max_steps / mu)  # TRL counts optimizer steps
    else:
        steps = math.ceil(args.num_train_epochs * max(1, train_size) / prompts)
    schedule = _value(args.lr_scheduler_type)
    if schedule not in SCHEDULES:
        raise ValueError(
            f"trl.GRPOConfig field lr_scheduler_type={schedule!r}: labkit has "
            f"{sorted(SCHEDULES)}; pick one of those"
        )
    warmup = args.warmup_steps
    warmup = round(warmup * steps) if 0 < warmup < 1 else int(warmup)  # a ratio below 1
    save = "save_strategy" in {f.name for f in dataclasses.fields(args)}
    no_save = save and _value(args.save_strategy) == "no"
    report = args.report_to if isinstance(args.report_to, (list, tuple)) else [args.report_to]
    report = [r for r in report if r not in (None, "none")]
    if "all" in report:  # TRL: every installed integration; labkit: the trackers it has
        report = list(TRACKERS)
    dropped = [r for r in report if r not in TRACKERS]
    if dropped:
        warnings.warn(
            f"trl.GRPOConfig report_to={dropped}: labkit writes to {list(TRACKERS)} only "
            "(and its own run log); those are skipped",
            stacklevel=4,
        )
    return {
        "prompts_per_step": prompts,
        "max_steps": steps,
        "ref_model_sync_steps": max(1, sync // mu),
        "lr_scheduler_type": SCHEDULES[schedule],
        "warmup_steps": warmup,
        "precision": "fp16" if args.fp16 else "bf16" if args.bf16 else "fp32",
        "save_steps": 0 if no_save else int(args.save_steps if args.save_steps >= 1 else 0),
        "gradient_checkpointing": bool(
            getattr(args, "activation_checkpointing", None) or args.gradient_checkpointing
        ),
        "report_to": tuple(r for r in report if r in TRACKERS),
        "project": getattr(args, "project", None) or "labkit",
    }


def trl_run_name(args, defaults: dict) -> str | None:
    """The run's name: TRL's ``run_name``, else the last part of an ``output_dir`` the user set
    (its checkpoints then go to ``runs/<name>/``); None: a run in memory."""
    if getattr(args, "run_name", None):
        return str(args.run_name)
    out = getattr(args, "output_dir", None)
    return pathlib.Path(out).name if out and out != defaults.get("output_dir") else None
