"""labkit's GRPO against TRL's GRPOTrainer on one GPU, same work: seconds per step, generated
tokens per second, peak GPU memory. No hub needed: the shipped tiny policy (full fine-tuning)
and SmolLM2-135M's architecture with random weights (``labkit.experiments.gpu.random_policy``)
+ LoRA r=16 (step time and memory do not depend on the weights' values; its completions run to
the length limit), both on 2-digit addition with the ``digit_partial`` reward and the tiny
policy's character tokenizer. Same config for both: precision by the hardware (bf16 autocast on
>= sm80, fp16 + scaler on 7.x), beta 0, loss "dapo", one update per batch, lr 1e-5, gradient
checkpointing off, TRL without vLLM. Any other ``--policies`` name goes to ``lk.load_policy``
(a hub id on a machine that reaches the hub) + LoRA.

``--json FILE`` appends one row per (policy, trainer) as it finishes, then the ratio row.
``--cpu``: a dry run on the CPU at tiny sizes (fp32, a 1-layer SmolLM2, 2 steps): it checks the
script; its times mean nothing. Without ``--cpu`` and without CUDA it says so and exits.

    python benchmarks/gpu_step_vs_trl.py [--steps 8] [--warmup 2] [--json rows.jsonl]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile

import torch
from timing import step_times, trl_clock

import labkit as lk
from labkit.experiments import gpu

SHAPES = {"tiny": (16, 8, 8), "smollm2-135m": (4, 8, 128)}  # prompts, generations, tokens
CPU_SHAPE = (2, 2, 4)
LR = 1e-5


def policy(name: str, cpu: bool):
    """``(model, tokenizer, lora)``: the tiny policy, random SmolLM2-135M or a named one."""
    if name == "tiny":
        return *lk.load_policy("tiny"), False
    torch.manual_seed(0)
    if name in gpu.MODELS:
        return *gpu.random_policy(name, **({"num_hidden_layers": 1} if cpu else {})), True
    return *lk.load_policy(name), True


def shape(name: str, cpu: bool) -> tuple[int, int, int]:
    return CPU_SHAPE if cpu else SHAPES.get(name, SHAPES["smollm2-135m"])


def labkit_run(name: str, steps: int, device: str, cpu: bool) -> dict:
    model, tok, lora = policy(name, cpu)
    P, G, L = shape(name, cpu)
    tr = lk.GRPOTrainer(
        lk.models.add_lora(model) if lora else model,
        tokenizer=tok,
        task="addition",
        reward_funcs=["digit_partial"],
        device=device,
        prompts_per_step=P,
        num_generations=G,
        max_completion_length=L,
        loss_type="dapo",
        beta=0.0,
        learning_rate=LR,
        max_steps=steps,
        save_steps=0,
        seed=0,
    )
    reset_peak(device)
    times = step_times(tr.step, steps)
    tokens = (tr.log.metrics["len/mean"] * P * G).tolist()
    return {"times": times, "tokens": tokens, "peak_gb": peak_gb(device), "precision": tr.precision}


def trl_run(name: str, steps: int, device: str, precision: str, cpu: bool) -> dict:
    from datasets import Dataset
    from peft import LoraConfig
    from trl import GRPOConfig, GRPOTrainer

    model, tok, lora = policy(name, cpu)
    P, G, L = shape(name, cpu)
    task = lk.get_task("addition")
    data = Dataset.from_dict(
        {"prompt": [e.prompt for e in task.train], "answer": [e.answer for e in task.train]}
    )
    clock = trl_clock()
    reset_peak(device)
    with tempfile.TemporaryDirectory() as out:
        args = GRPOConfig(
            output_dir=out,
            bf16=precision == "bf16",
            fp16=precision == "fp16",
            use_cpu=device == "cpu",
            report_to=[],
            seed=0,
            activation_checkpointing=False,
            per_device_train_batch_size=P * G,
            num_generations=G,
            max_completion_length=L,
            loss_type="dapo",
            beta=0.0,
            learning_rate=LR,
            max_steps=steps,
            logging_steps=1,
            save_strategy="no",
            temperature=1.0,
            disable_tqdm=True,
        )
        lora_config = LoraConfig(r=16, lora_alpha=32, target_modules="all-linear")
        trainer = GRPOTrainer(
            model=model,
            reward_funcs=lk.digit_partial,
            args=args,
            train_dataset=data,
            callbacks=[clock],
            processing_class=tok,
            peft_config=lora_config if lora else None,
        )
        trainer.train()
    history = trainer.state.log_history
    tokens = [
        h["completions/mean_length"] * P * G for h in history if "completions/mean_length" in h
    ]
    return {"times": clock.times, "tokens": tokens, "peak_gb": peak_gb(device)}


def reset_peak(device: str) -> None:
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()


def peak_gb(device: str):
    return torch.cuda.max_memory_allocated() / 2**30 if device == "cuda" else None


def summary(name: str, trainer: str, result: dict, warmup: int, cpu: bool) -> dict:
    P, G, L = shape(name, cpu)
    times, tokens = result["times"][warmup:], result["tokens"][warmup:]
    step = statistics.median(times)
    per_step = statistics.mean(tokens) if tokens else float("nan")
    return {
        "policy": name,
        "trainer": trainer,
        "shape": {"prompts": P, "generations": G, "max_tokens": L},
        "step_s": step,
        "tokens_per_s": per_step / step,
        "peak_gb": result["peak_gb"],
        "times": result["times"],
    }


def emit(row: dict, path) -> None:
    print(json.dumps({k: v for k, v in row.items() if k != "times"}), flush=True)
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(row) + "\n")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--policies", default="tiny,smollm2-135m")
    ap.add_argument("--json", default=None, help="append a JSON row per result to this file")
    ap.add_argument("--cpu", action="store_true", help="a dry run of the script on the CPU")
    args = ap.parse_args()
    if not args.cpu and not torch.cuda.is_available():
        print("needs CUDA: this benchmark times GRPO on a GPU (no GPU here; --cpu: a dry run)")
        return 0
    device = "cpu" if args.cpu else "cuda"
    steps, warmup = (2, 1) if args.cpu else (args.steps, args.warmup)
    where = torch.cuda.get_device_name(0) if device == "cuda" else "cpu"
    for name in args.policies.split(","):
        mine = labkit_run(name, steps, device, args.cpu)
        ours = summary(name, "labkit", mine, warmup, args.cpu)
        emit({**ours, "precision": mine["precision"], "device": where}, args.json)
        theirs = trl_run(name, steps, device, mine["precision"], args.cpu)
        theirs = summary(name, "TRL", theirs, warmup, args.cpu)
        emit({**theirs, "precision": mine["precision"], "device": where}, args.json)
        ratio = {"policy": name, "labkit_over_trl_step_s": ours["step_s"] / theirs["step_s"]}
        emit(ratio, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
