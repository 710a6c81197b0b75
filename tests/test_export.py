"""``python -m labkit export-trl``: the exported TRL script runs, the accelerate configs load."""

import ast
import json
import os
import re
import subprocess
import sys
import warnings

import pandas as pd
import pytest
from accelerate.commands.config.config_args import load_config_from_file

from labkit.algos.config import GRPOConfig
from labkit.cli import main
from labkit.integrations.export import accelerate_config, export_trl, reward_code


def ends_in_seven(completions, **kwargs):
    """A reward defined outside labkit: its source is copied into the exported script."""
    return [1.0 if c.strip().endswith("7") else 0.0 for c in completions]


@pytest.mark.slow
def test_exported_script_runs_two_grpo_steps_on_cpu_with_the_same_rewards(tmp_path):
    out = tmp_path / "export"
    rc = main(
        [
            "export-trl",
            "--out",
            str(out),
            "--num-gpus",
            "0",
            "--model",
            "tiny",
            "--reward",
            "exact_match",
            "labkit.rewards:digit_partial",
            "--set",
            "num_generations=4",
            "prompts_per_step=2",
            "max_completion_length=4",
            "beta=0.04",
            "learning_rate=0.001",
            "reward_weights=[1.0,0.5]",
        ]
    )
    assert rc == 0
    text = (out / "train_grpo.py").read_text()
    assert "from labkit.rewards import exact_match" in text and "MODEL = 'tiny'" in text
    assert "'per_device_train_batch_size': 8" in text and "'beta': 0.04" in text
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "accelerate.commands.launch",
            "--config_file",
            str(out / "accelerate.yaml"),
            str(out / "train_grpo.py"),
            "--max-steps",
            "2",
            "--output-dir",
            str(tmp_path / "run"),
        ],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert (tmp_path / "run" / "model.safetensors").exists()
    steps = [
        pd.read_parquet(tmp_path / "run" / "completions" / f"completions_0000{k}.parquet")
        for k in (1, 2)
    ]
    for s in steps:  # 2 prompts x 4 generations, scored by both reward functions
        assert len(s) == 8 and {"exact_match", "digit_partial", "advantage"} <= set(s.columns)
    rows = [json.loads(line) for line in (out / "data" / "train.jsonl").read_text().splitlines()]
    answers = {r["prompt"]: r["answer"] for r in rows}
    s = steps[0]
    assert s["prompt"].isin(answers).all()
    from labkit.rewards import exact_match

    assert list(s["exact_match"]) == exact_match(
        list(s["completion"]), answer=[answers[p] for p in s["prompt"]]
    )


def test_a_notebook_reward_is_copied_and_runs_without_its_module(tmp_path):
    code, names = reward_code([ends_in_seven, "length_target"])
    assert names == ["ends_in_seven", "length_target"]
    assert "def ends_in_seven(completions" in code and "import test_export" not in code
    ns = {}
    exec(code, ns)  # noqa: S102  (the copied source defines a working function)
    assert ns["ends_in_seven"](["17", "18"]) == [1.0, 0.0]


@pytest.mark.parametrize(
    "gpus, ds, kind, procs",
    [
        (0, "none", "NO", 1),
        (1, "none", "NO", 1),
        (8, "none", "MULTI_GPU", 8),
        (4, "zero2", "DEEPSPEED", 4),
        (8, "zero3", "DEEPSPEED", 8),
    ],
)
def test_accelerate_configs_load_in_accelerate(tmp_path, gpus, ds, kind, procs):
    path = tmp_path / "a.yaml"
    path.write_text(accelerate_config(gpus, ds))
    cfg = load_config_from_file(str(path))
    assert (
        str(getattr(cfg.distributed_type, "value", cfg.distributed_type)) == kind
        and cfg.num_processes == procs
    )
    assert cfg.use_cpu == (gpus == 0)
    if ds != "none":
        assert cfg.deepspeed_config["zero_stage"] == int(ds[-1])
        assert str(getattr(cfg.mixed_precision, "value", cfg.mixed_precision)) == "bf16"


def test_vllm_server_takes_one_gpu_and_bad_options_are_refused(tmp_path):
    cfg = GRPOConfig(prompts_per_step=3, num_generations=4)
    ex = export_trl(
        tmp_path / "v", cfg, "tiny", reward_funcs="exact_match", num_gpus=4, vllm="server"
    )
    launch = ex.launch.read_text()
    assert "CUDA_VISIBLE_DEVICES=0 trl vllm-serve" in launch
    assert subprocess.run(["bash", "-n", str(ex.launch)], check=False).returncode == 0
    assert "accelerate.yaml --num_processes 3 train_grpo.py" in launch  # flags before script
    resolve = re.search(r'--model "\$\((.*)\)" &', launch).group(1)
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    where = subprocess.run(
        ["bash", "-c", resolve], capture_output=True, text=True, env=env, check=False
    ).stdout.strip()
    assert where.endswith("checkpoints/tiny-addition")  # resolved on the machine that runs it
    assert ex.config["use_vllm"] and ex.config["vllm_mode"] == "server" and ex.config["bf16"]
    assert ex.config["per_device_train_batch_size"] == 3 * 4 // 3  # 3 training GPUs
    with pytest.raises(ValueError, match="vllm='server' with num_gpus=1"):
        export_trl(tmp_path / "w", num_gpus=1, vllm="server")
    with pytest.raises(ValueError, match="deepspeed='zero1'"):
        accelerate_config(2, "zero1")
    assert main(["export-trl", "--out", str(tmp_path / "x"), "--set", "beta=-1"]) == 2
    assert main(["export-trl", "--out", str(tmp_path / "x"), "--set", "gamma=1"]) == 2


def test_from_run_takes_the_runs_task_rewards_and_hyperparameters(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    cfg = GRPOConfig(num_generations=4, prompts_per_step=6, beta=0.02, loss_type="dr_grpo")
    (run / "config.json").write_text(
        json.dumps({**cfg.to_dict(), "task": "short_prompts", "reward_funcs": ["length_target"]})
    )
    out = tmp_path / "out"
    assert (
        main(
            [
                "export-trl",
                "--out",
                str(out),
                "--from-run",
                str(run),
                "--num-gpus",
                "2",
                "--set",
                "beta=0.05",
            ]
        )
        == 0
    )
    text = (out / "train_grpo.py").read_text()
    assert "from labkit.rewards import length_target" in text
    for field in (
        "'num_generations': 4",
        "'per_device_train_batch_size': 12",
        "'beta': 0.05",
        "'loss_type': 'dr_grpo'",
        "'bf16': True",
    ):
        assert field in text, field
    first = json.loads((out / "data" / "train.jsonl").read_text().splitlines()[0])
    assert first["prompt"].startswith("<|im_start|>user") and first["answer"] == ""


def test_from_run_rebuilds_a_samplers_pool_from_its_task_kwargs(tmp_path):
    """A PassRateSampler run stores its pool and seed (``task_kwargs``): the exported prompts
    are that pool, not the default one."""
    from labkit.tasks import get_task

    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(
        json.dumps(
            {
                **GRPOConfig().to_dict(),
                "task": "addition+uniform",
                "task_kwargs": {"pool": 5, "seed": 3},
                "reward_funcs": ["exact_match"],
            }
        )
    )
    out = tmp_path / "out"
    assert main(["export-trl", "--out", str(out), "--from-run", str(run), "--num-gpus", "0"]) == 0
    rows = [
        json.loads(x)["prompt"] for x in (out / "data" / "train.jsonl").read_text().splitlines()
    ]
    assert rows == [e.prompt for e in get_task("addition+uniform", pool=5, seed=3).train]
    assert rows != [e.prompt for e in get_task("addition+uniform").train]


def script_config(path) -> dict:
    """The ``CONFIG`` dict literal of an exported script."""
    tree = ast.parse(path.read_text())
    node = next(n for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "CONFIG")
    return ast.literal_eval(node.value)


@pytest.mark.parametrize(
    "labkit, trl",
    [
        (
            {"gradient_checkpointing": True, "tis_cap": 2.0, "tis_mode": "sequence_truncate"},
            {
                "activation_checkpointing": True,
                "vllm_importance_sampling_correction": True,
                "vllm_importance_sampling_mode": "sequence_truncate",
                "vllm_importance_sampling_clip_max": 2.0,
            },
        ),
        (
            {},
            {
                "activation_checkpointing": False,  # both on by default in TRL's GRPOConfig
                "vllm_importance_sampling_correction": False,
            },
        ),
    ],
)
def test_checkpointing_and_tis_reach_trls_config(tmp_path, labkit, trl):
    cfg = GRPOConfig(prompts_per_step=2, num_generations=4, **labkit)
    ex = export_trl(
        tmp_path / "out", cfg, "tiny", reward_funcs="exact_match", num_gpus=2, vllm="colocate"
    )
    config = script_config(ex.script)
    assert config == ex.config
    assert {k: config.get(k) for k in trl} == trl
    text = ex.script.read_text()
    assert "TRL applies TIS only when generation runs in vLLM" in text
    assert "'activation_checkpointing': " in text and "# labkit's gradient_checkpointing" in text
    from trl import GRPOConfig as TRLConfig

    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # no deprecated names
        args = TRLConfig(
            **{**config, "output_dir": str(tmp_path / "run"), "use_cpu": True, "bf16": False}
        )
    for k, v in trl.items():
        assert getattr(args, k) == v, k
    assert args.gradient_checkpointing == labkit.get("gradient_checkpointing", False)
    if not labkit:  # why the export sets both: TRL's defaults turn them on
        with pytest.warns(FutureWarning, match="gradient_checkpointing"):
            default = TRLConfig(output_dir=str(tmp_path / "d"), use_cpu=True, bf16=False)
        assert default.activation_checkpointing and default.vllm_importance_sampling_correction
