"""``python -m labkit export-trl``: a lab's GRPO run as a standalone TRL run on N GPUs.

Writes into ``--out``:
  ``train_grpo.py``     TRL ``GRPOTrainer`` with the same reward functions and hyperparameters
                        (``trl_script``, ``trl_bridge.trl_kwargs``); CPU-safe settings by
                        itself when there is no GPU;
  ``data/train.jsonl``  the task's training prompts and answers (TRL passes ``answer`` to the
                        reward functions, as labkit does);
  ``accelerate.yaml``   ``accelerate launch`` config: N processes, DDP or DeepSpeed ZeRO-2/3;
  ``launch.sh``         the command (with ``trl vllm-serve`` on the first GPU for
                        ``--vllm server``).
Then ``bash launch.sh`` on the GPU box. ``--num-gpus 0`` writes a one-process CPU config.
"""

from __future__ import annotations

import dataclasses
import json
import pathlib

from labkit.algos.config import GRPOConfig
from labkit.integrations.trl_bridge import trl_kwargs
from labkit.integrations.trl_env import env_script_text

# resolve_model, resolve_reward, reward_code live in trl_script and are re-exported: scripts
# exported before the split import resolve_model from here
from labkit.integrations.trl_script import (  # noqa: F401
    resolve_model,
    resolve_reward,
    reward_code,
    script_text,
)

DEEPSPEED = ("none", "zero2", "zero3")
VLLM = ("off", "colocate", "server")


def accelerate_config(num_gpus: int, deepspeed: str = "none") -> str:
    """An ``accelerate launch`` config (YAML): DDP or DeepSpeed ZeRO on ``num_gpus`` GPUs of one
    machine, bf16; ``num_gpus=0``: one CPU process. The layout of TRL's
    ``examples/accelerate_configs``.

    >>> print(accelerate_config(0).splitlines()[1])
    distributed_type: 'NO'
    """
    if deepspeed not in DEEPSPEED:
        raise ValueError(f"deepspeed={deepspeed!r}: use one of {DEEPSPEED}")
    if num_gpus < 0:
        raise ValueError(f"num_gpus={num_gpus}: use 0 (CPU) or more")
    lines = ["compute_environment: LOCAL_MACHINE"]
    if num_gpus == 0:
        lines += ["distributed_type: 'NO'", "mixed_precision: 'no'", "use_cpu: true"]
    elif deepspeed != "none":
        stage = deepspeed[-1]
        lines += [
            "distributed_type: DEEPSPEED",
            "deepspeed_config:",
            "  deepspeed_multinode_launcher: standard",
            "  offload_optimizer_device: none",
            "  offload_param_device: none",
            f"  zero3_init_flag: {'true' if stage == '3' else 'false'}",
            f"  zero3_save_16bit_model: {'true' if stage == '3' else 'false'}",
            f"  zero_stage: {stage}",
            "mixed_precision: bf16",
            "use_cpu: false",
        ]
    else:
        lines += [
            "distributed_type: " + ("MULTI_GPU" if num_gpus > 1 else "'NO'"),
            "gpu_ids: all",
            "mixed_precision: bf16",
            "use_cpu: false",
        ]
    lines += [
        "downcast_bf16: 'no'",
        "machine_rank: 0",
        "main_training_function: main",
        "num_machines: 1",
        f"num_processes: {max(1, num_gpus)}",
        "rdzv_backend: static",
        "same_network: true",
    ]
    return "\n".join(lines) + "\n"


def launch_script(model: str, num_gpus: int, vllm: str) -> str:
    """``launch.sh``: accelerate launch; for ``vllm='server'`` a ``trl vllm-serve`` process on
    GPU 0 generates and the other GPUs train."""
    head = '#!/usr/bin/env bash\nset -e\ncd "$(dirname "$0")"\n'
    run = 'accelerate launch --config_file accelerate.yaml{} train_grpo.py "$@"\n'
    if vllm != "server":
        return head + run.format("")
    if model in ("tiny", "smollm2-offline"):  # resolved where the script runs
        model = f"$(python -c 'from labkit.integrations.trl_script import resolve_model as r; print(r(\"{model}\"))')"
    gpus = ",".join(str(i) for i in range(1, num_gpus))
    return (
        head + f'CUDA_VISIBLE_DEVICES=0 trl vllm-serve --model "{model}" &\n'
        "SERVER=$!; trap 'kill $SERVER' EXIT\n"
        f"CUDA_VISIBLE_DEVICES={gpus} " + run.format(f" --num_processes {num_gpus - 1}")
    )


@dataclasses.dataclass
class Export:
    """What :func:`export_trl` wrote."""

    folder: pathlib.Path
    script: pathlib.Path
    accelerate_config: pathlib.Path
    launch: pathlib.Path
    config: dict


def export_trl(
    out,
    config: GRPOConfig | None = None,
    model: str = "tiny",
    task="addition",
    reward_funcs=("digit_partial",),
    num_gpus: int = 8,
    deepspeed: str = "none",
    vllm: str = "off",
    env: str | None = None,
    max_turns: int = 2,
) -> Export:
    """Write a standalone TRL GRPO run of ``config`` to the folder ``out`` (see module doc).

    The per-device batch is prompts_per_step x num_generations / training processes, so one
    TRL step trains on what one labkit step does. ``env`` (a name of ``labkit.envs.ENVS``):
    the script passes that environment class to TRL, as ``environment_factory`` for a chat
    model, else through labkit's episode loop as ``rollout_func`` (``trl_env``); ``task`` is
    then the environment's.
    """
    from labkit.envs import ENVS
    from labkit.tasks import get_task

    if env is not None and env not in ENVS:
        raise ValueError(f"env={env!r}: use one of {sorted(ENVS)}")
    if env is not None:
        task = ENVS[env][1]()

    if vllm not in VLLM:
        raise ValueError(f"vllm={vllm!r}: use one of {VLLM}")
    if vllm == "server" and num_gpus < 2:
        raise ValueError(
            f"vllm='server' with num_gpus={num_gpus}: the server takes one GPU "
            "and training at least one more; use num_gpus >= 2 or vllm='colocate'"
        )
    cfg, task = config or GRPOConfig(), get_task(task)
    procs = max(1, num_gpus - (vllm == "server"))
    kw = trl_kwargs(cfg, "output", task, procs, gpu=num_gpus > 0)
    if num_gpus > 0:
        kw.update(bf16=True)
    if vllm != "off":
        kw.update(use_vllm=True, vllm_mode=vllm)
    folder = pathlib.Path(out)
    (folder / "data").mkdir(parents=True, exist_ok=True)
    with open(folder / "data" / "train.jsonl", "w") as f:
        f.writelines(
            json.dumps({"prompt": e.prompt, "answer": e.answer}) + "\n" for e in task.train
        )
    script = (
        script_text(kw, model, task.name, reward_funcs)
        if env is None
        else env_script_text(kw, model, env, reward_funcs, max_turns)
    )
    files = {
        "train_grpo.py": script,
        "accelerate.yaml": accelerate_config(procs if num_gpus else 0, deepspeed),
        "launch.sh": launch_script(model, num_gpus, vllm),
    }
    for name, text in files.items():
        (folder / name).write_text(text)
    (folder / "launch.sh").chmod(0o755)
    return Export(
        folder, folder / "train_grpo.py", folder / "accelerate.yaml", folder / "launch.sh", kw
    )


def add_parser(subparsers) -> None:
    """The ``export-trl`` subcommand of ``python -m labkit``."""
    p = subparsers.add_parser(
        "export-trl", help="write a TRL script + accelerate config for this GRPO run on N GPUs"
    )
    p.add_argument("--out", default="trl_export", help="folder to write (default trl_export)")
    p.add_argument(
        "--from-run",
        help="a labkit run folder: take its config.json (task, "
        "rewards, hyperparameters); flags below override",
    )
    p.add_argument(
        "--model", default=None, help="labkit model name, folder or hub id (default tiny)"
    )
    p.add_argument("--task", default=None)
    p.add_argument(
        "--reward", nargs="+", default=None, help="built-in reward names or module:function"
    )
    p.add_argument("--num-gpus", type=int, default=8, help="0 writes a CPU config")
    p.add_argument("--deepspeed", choices=DEEPSPEED, default="none")
    p.add_argument("--vllm", choices=VLLM, default="off")
    p.add_argument(
        "--env",
        default=None,
        help="a labkit environment (calculator, guess): "
        "TRL gets the same class (environment_factory, or rollout_func + env_mask)",
    )
    p.add_argument("--max-turns", type=int, default=2, help="policy turns per episode (--env)")
    p.add_argument(
        "--set",
        nargs="*",
        default=[],
        metavar="FIELD=VALUE",
        help="GRPOConfig fields, e.g. --set num_generations=8 beta=0.04",
    )
    p.set_defaults(func=run)


def run(args) -> int:
    """Build the config from ``--from-run`` and ``--set``, write the export, say what to run."""
    from labkit.tasks import saved_task

    base = (
        json.loads((pathlib.Path(args.from_run) / "config.json").read_text())
        if args.from_run
        else {}
    )
    fields = {f.name: f for f in dataclasses.fields(GRPOConfig)}
    values = {k: v for k, v in base.items() if k in fields}
    for item in args.set:
        key, _, text = item.partition("=")
        if key not in fields:
            raise ValueError(
                f"--set {item}: unknown field {key!r}; GRPOConfig has {', '.join(sorted(fields))}"
            )
        values[key] = _parse(text)
    task = args.task or (saved_task(base) if "task" in base else "addition")  # + task_kwargs
    ex = export_trl(
        args.out,
        GRPOConfig(**values),
        args.model or base.get("model", "tiny"),
        task,
        args.reward or base.get("reward_funcs", ["digit_partial"]),
        args.num_gpus,
        args.deepspeed,
        args.vllm,
        args.env,
        args.max_turns,
    )
    print(f"wrote {ex.script}, {ex.accelerate_config}, {ex.launch}")
    print(
        f"run: bash {ex.launch}   (or: cd {ex.folder} && accelerate launch "
        "--config_file accelerate.yaml train_grpo.py)"
    )
    return 0


def _parse(text: str):
    """``8`` -> 8, ``0.04`` -> 0.04, ``none`` -> None, ``true`` -> True, ``[1, 0.5]`` -> list,
    anything else the string itself.

    >>> _parse("8"), _parse("none"), _parse("True"), _parse("[1, 0.5]"), _parse("dapo")
    (8, None, True, [1, 0.5], 'dapo')
    """
    low = text.lower()
    if low in ("none", "null"):
        return None
    if low in ("true", "false"):
        return low == "true"
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text
