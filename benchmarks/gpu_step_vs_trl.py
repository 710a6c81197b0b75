"""labkit's GRPO against TRL's GRPOTrainer on one GPU, same config: step time, generated
tokens per second, peak GPU memory. Needs CUDA and the hub (the model and GSM8K); on a CPU it
prints "needs CUDA" and exits.

Config: ``--model`` (default Qwen/Qwen2.5-0.5B-Instruct) + LoRA r=16, GSM8K with a \\boxed{}
prompt, 4 prompts x 8 generations, completion length 256, beta 0, loss "dapo", precision by
the hardware (bf16 on >= sm80, fp16 on 7.x) for both; TRL with vLLM off, gradient
checkpointing off, like labkit.

    python benchmarks/gpu_step_vs_trl.py [--steps 20] [--model ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile

import torch
from timing import step_times, trl_clock

P, G, L = 4, 8, 256


def labkit_run(model_name: str, steps: int) -> dict:
    import labkit as lk

    model, tok = lk.load_policy(model_name)
    task = lk.tasks.gsm8k()
    tr = lk.GRPOTrainer(
        lk.add_lora(model),
        tokenizer=tok,
        task=task,
        device="auto",
        reward_funcs=[task.accuracy_reward],
        prompts_per_step=P,
        num_generations=G,
        max_completion_length=L,
        loss_type="dapo",
        beta=0.0,
        learning_rate=1e-5,
        max_steps=steps,
        save_steps=0,
    )
    print(lk.models.memory.memory_report(tr))
    torch.cuda.reset_peak_memory_stats()
    times = step_times(tr.step, steps)
    tokens = tr.log.metrics["len/mean"].mean() * P * G
    return {"times": times, "tokens": tokens, "peak_gb": torch.cuda.max_memory_allocated() / 2**30}


def trl_run(model_name: str, steps: int, precision: str) -> dict:
    from peft import LoraConfig
    from trl import GRPOConfig, GRPOTrainer

    import labkit as lk

    task = lk.tasks.gsm8k()
    from datasets import Dataset

    data = Dataset.from_dict(
        {"prompt": [e.prompt for e in task.train], "answer": [e.answer for e in task.train]}
    )
    clock = trl_clock()
    torch.cuda.reset_peak_memory_stats()
    with tempfile.TemporaryDirectory() as out:
        args = GRPOConfig(
            output_dir=out,
            bf16=precision == "bf16",
            fp16=precision == "fp16",
            report_to=[],
            seed=0,
            gradient_checkpointing=False,
            per_device_train_batch_size=P * G,
            num_generations=G,
            max_completion_length=L,
            loss_type="dapo",
            beta=0.0,
            learning_rate=1e-5,
            max_steps=steps,
            logging_steps=10**6,
            save_strategy="no",
            disable_tqdm=True,
        )
        trainer = GRPOTrainer(
            model=model_name,
            reward_funcs=task.accuracy_reward,
            args=args,
            train_dataset=data,
            callbacks=[clock],
            peft_config=LoraConfig(r=16, lora_alpha=32, target_modules="all-linear"),
        )
        trainer.train()
        lengths = [h.get("completions/mean_length", L) for h in trainer.state.log_history]
    return {
        "times": clock.times,
        "tokens": statistics.mean(lengths) * P * G,
        "peak_gb": torch.cuda.max_memory_allocated() / 2**30,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--model", default="Qwen/Qwen2.5-0.5B-Instruct")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("needs CUDA: this benchmark times GRPO on a GPU (no GPU here)")
        return 0
    from labkit.models.device import choose_precision

    precision = choose_precision("cuda")
    print(f"{torch.cuda.get_device_name(0)}, precision {precision}, {P}x{G}, L={L}")
    for name, result in (
        ("labkit", labkit_run(args.model, args.steps)),
        ("TRL", trl_run(args.model, args.steps, precision)),
    ):
        step = statistics.median(result["times"][args.warmup :])
        print(
            f"{name:7s} step {step:6.2f} s  {result['tokens'] / step:8.0f} generated tok/s  "
            f"peak {result['peak_gb']:.1f} GB"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
