"""The text of the exported ``train_grpo.py``: TRL's ``GRPOTrainer`` with labkit's rewards.

The reward functions are imported by module path, or their source copied when they live in a
notebook or a script; a labkit model name is resolved to a folder when the script starts
(:func:`resolve_model`), so the path is the one of the machine that runs it.
"""

from __future__ import annotations

import importlib
import inspect
import textwrap

from labkit import rewards
from labkit.rewards import get_reward, reward_name

SCRIPT = '''\
"""GRPO with TRL, exported from labkit ({source}).

    accelerate launch --config_file accelerate.yaml train_grpo.py [--max-steps N]
"""
import argparse
import pathlib

import torch
from datasets import load_dataset
from trl import GRPOConfig, GRPOTrainer

{reward_code}

HERE = pathlib.Path(__file__).parent
MODEL = {model!r}  # labkit names resolve on the machine that runs this (labkit installed)
CONFIG = {config}
REWARD_FUNCS = [{reward_names}]


def model_path(name):
    if name in ("tiny", "smollm2-offline"):
        from labkit.integrations.trl_script import resolve_model
        return resolve_model(name)
    return name  # a folder or a hub id


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-steps", type=int, default=CONFIG["max_steps"])
    ap.add_argument("--output-dir", default=CONFIG["output_dir"])
    a = ap.parse_args()
    kw = {{**CONFIG, "max_steps": a.max_steps, "output_dir": a.output_dir}}
    if not torch.cuda.is_available():  # CPU-safe: no bf16, no activation checkpointing
        kw.update(bf16=False, use_cpu=True, activation_checkpointing=False)
        kw.update(use_vllm=False)
    data = load_dataset("json", data_files=str(HERE / "data" / "train.jsonl"), split="train")
    trainer = GRPOTrainer(model=model_path(MODEL), reward_funcs=REWARD_FUNCS, args=GRPOConfig(**kw),
                          train_dataset=data)
    trainer.train()
    trainer.save_model(kw["output_dir"])


if __name__ == "__main__":
    main()
'''


def script_text(trl_kwargs: dict, model: str, task_name: str, reward_funcs) -> str:
    """``train_grpo.py``: ``trl_kwargs`` as TRL's GRPOConfig, ``reward_funcs`` as its rewards.

    >>> text = script_text({"beta": 0.04}, "tiny", "addition", ["exact_match"])
    >>> "from labkit.rewards import exact_match" in text and "'beta': 0.04," in text
    True
    """
    code, names = reward_code(reward_funcs)
    return SCRIPT.format(
        source=f"model {model}, task {task_name}",
        reward_code=code,
        model=model,
        config=config_text(trl_kwargs),
        reward_names=", ".join(names),
    )


def config_text(trl_kwargs: dict) -> str:
    """``trl_kwargs`` as a dict literal, one field a line, with a comment where a field is
    labkit's under another name (``trl_bridge.NOTES``).

    >>> print(config_text({"beta": 0.0, "activation_checkpointing": False}))
    {
        'beta': 0.0,
        'activation_checkpointing': False,  # labkit's gradient_checkpointing
    }
    """
    from labkit.integrations.trl_bridge import NOTES

    lines = [
        f"    {k!r}: {v!r}," + (f"  # {NOTES[k]}" if k in NOTES else "")
        for k, v in trl_kwargs.items()
    ]
    return "{\n" + "\n".join(lines) + "\n}"


def reward_code(specs) -> tuple[str, list[str]]:
    """Python source that defines each reward function in the script, and their names.

    ``specs``: built-in names (``"length_target"``) and ``"module:function"`` strings are
    imported by module path; a function object is imported when it is labkit's, else its source
    is copied (a reward written in a notebook or a test), so it must be self-contained (its
    imports inside the function).

    >>> code, names = reward_code(["exact_match", "labkit.rewards:length_target"])
    >>> [line for line in code.splitlines() if line]
    ['from labkit.rewards import exact_match', 'from labkit.rewards import length_target']
    """
    lines, names = [], []
    for spec in [specs] if isinstance(specs, str) or callable(specs) else specs:
        fn = resolve_reward(spec)
        name, module = reward_name(fn), getattr(fn, "__module__", "__main__")
        if module.startswith("labkit.rewards.") and name in rewards.__all__:
            module = "labkit.rewards"  # the public path, not the file it lives in
        if isinstance(spec, str) or module.split(".")[0] == "labkit":
            lines.append(f"from {module} import {name}")
        else:
            try:
                lines.append(textwrap.dedent(inspect.getsource(fn)).rstrip())
            except (OSError, TypeError):
                raise ValueError(
                    f"reward {name!r}: its source cannot be read; define it in a "
                    ".py file and pass it as 'module:function'"
                ) from None
        names.append(name)
    return "\n\n\n".join(lines), names


def resolve_reward(spec):
    """A reward from a built-in name (``length_target``), ``module:function`` or a function.

    >>> resolve_reward("labkit.rewards:length_target").__name__
    'length_target'
    """
    if callable(spec) or ":" not in spec:
        return get_reward(spec)
    module, name = spec.split(":", 1)
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise ValueError(
            f"reward {spec!r} cannot be imported ({e}): give 'module:function' "
            "with the module on the Python path"
        ) from None


def resolve_model(name: str) -> str:
    """What TRL loads: the folder of a built-in labkit model on this machine, else the name
    (a folder or a hub id). The exported script calls it when it starts, not at export time,
    so the path is the target machine's (and SmolLM2 is converted there if needed)."""
    from labkit.models.policy import BUILTIN

    if name in BUILTIN:
        return str(BUILTIN[name])
    if name == "smollm2-offline":
        from labkit.models.smollm2 import smollm2_folder

        return str(smollm2_folder())
    return name
