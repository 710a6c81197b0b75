"""TRL's trainer call, taken by labkit's sampling trainers, so a TRL script changes in one line:

    trainer = trl.GRPOTrainer(model=..., reward_funcs=..., args=trl.GRPOConfig(...),
                              train_dataset=..., eval_dataset=..., processing_class=...)
    trainer = lk.GRPOTrainer(model=..., reward_funcs=..., args=trl.GRPOConfig(...),   # same
                             train_dataset=..., eval_dataset=..., processing_class=...)

``args`` is TRL's ``GRPOConfig`` (read field by field: ``labkit.algos.config.trl_args``) or a
labkit config; ``train_dataset``/``eval_dataset`` are TRL's datasets
(:class:`labkit.tasks.trl_dataset.TRLDataset`); ``processing_class`` is the tokenizer (or a
processor holding one); ``peft_config`` wraps the model in that adapter, as TRL does.
``verifier``: a reward function's name (correct where it gives > 0) or
``fn(completion, answer) -> bool``; without one, no accuracy is reported (TRL reports none).
"""

from __future__ import annotations

from labkit.algos.config import TrainConfig
from labkit.algos.config.trl_args import from_trl_args, is_trl_args
from labkit.models.policy import load_policy, prepare_tokenizer
from labkit.tasks.trl_dataset import TRLDataset

TRL_ONLY = {
    "reward_processing_classes": "labkit's rewards are functions; call a reward model inside "
    "one, fn(completions, **kwargs) -> list[float]",
    "callbacks": "pass train(callback=fn(trainer, metrics)) (called after every step); "
    "report_to=('tensorboard', 'trackio') writes the trackers",
    "optimizers": "labkit's optimizer is AdamW with the config's learning-rate schedule",
    "rollout_func": "labkit samples with its own loop; multi-turn episodes: "
    "lk.MultiTurnGRPOTrainer(env=...)",
    "tools": "tools live in an environment: lk.MultiTurnGRPOTrainer(env=...)",
    "environment_factory": "lk.MultiTurnGRPOTrainer(env=...) takes TRL's environment_factory",
}
"""TRL ``GRPOTrainer`` arguments labkit does not take, and what to do instead."""


def trl_call(
    cls,
    model,
    task,
    config,
    *,
    tokenizer,
    run_name,
    overrides: dict,
    args=None,
    train_dataset=None,
    eval_dataset=None,
    processing_class=None,
    peft_config=None,
    verifier=None,
) -> dict:
    """The trainer's arguments (``model``, ``task``, ``config``, ``tokenizer``, ``run_name``,
    ``verifier``) from a call made in TRL's words or labkit's (module docstring)."""
    for name in overrides:
        if name in TRL_ONLY:
            raise ValueError(f"{name}=...: labkit does not take it: {TRL_ONLY[name]}")
    if args is None and (is_trl_args(task) or isinstance(task, TrainConfig)):
        args, task = task, "addition"  # TRL's third positional argument is args
    tokenizer = tokenizer or getattr(processing_class, "tokenizer", processing_class)
    if processing_class is not None:
        prepare_tokenizer(tokenizer)  # left padding and a pad token, as sampling needs
    if peft_config is not None:
        if isinstance(model, str):
            model, own = load_policy(model)
            tokenizer = tokenizer or own
        from peft import get_peft_model

        model = get_peft_model(model, peft_config)
    seed = _seed(args, config, overrides)
    if train_dataset is not None:
        if task not in (None, "addition"):
            raise ValueError("pass task=... (a labkit task) or train_dataset=... (TRL's), not both")
        task = TRLDataset(
            train_dataset,
            eval_dataset,
            verifier=None if isinstance(verifier, str) else verifier,
            seed=seed,
            chat_template_kwargs=getattr(args, "chat_template_kwargs", None),
        )
        verifier = verifier if isinstance(verifier, str) else None
    elif eval_dataset is not None:
        raise ValueError("eval_dataset=... needs train_dataset=... (TRL's prompt-only dataset)")
    if is_trl_args(args):
        if config is not None:
            raise ValueError("pass args=... (TRL's GRPOConfig) or config=... (labkit's), not both")
        train = len(getattr(task, "train", None) or []) if task is not None else 0
        fields, own = from_trl_args(args, cls.config_class, train_size=train)
        config, run_name = cls.config_class(**fields), run_name or own["run_name"]
    elif args is not None:
        if not isinstance(args, cls.config_class):
            raise ValueError(
                f"args={type(args).__name__}(...): pass TRL's GRPOConfig or labkit's "
                f"{cls.config_class.__name__}"
            )
        config = args
    return {
        "model": model,
        "task": task,
        "config": config,
        "tokenizer": tokenizer,
        "run_name": run_name,
        "verifier": verifier,
    }


def _seed(args, config, overrides: dict) -> int:
    """The run's seed as it will be (also the held-out split's): overrides, config, args."""
    for source in (overrides, vars(config) if config is not None else {}):
        if "seed" in source:
            return source["seed"]
    return getattr(args, "seed", 0) if args is not None else 0
