"""GRPO + LoRA on GSM8K on whatever GPU is there, with a preset per GPU class; on a CPU, a
small stand-in: the tiny policy on 2-digit addition, fp32 against bf16 autocast.

Presets (batch, precision, completion length) follow the memory each class has; their step
times are NOT measured here (this machine has no GPU): ``expected_step_s`` stays None until a
GPU run fills it (``benchmarks/gpu_step_vs_trl.py`` measures it).
"""

from __future__ import annotations

import pandas as pd
import torch

from labkit.algos.grpo import GRPOTrainer
from labkit.models.device import choose_precision
from labkit.models.policy import add_lora, load_policy
from labkit.tasks.hub import gsm8k

CLAIM = ("GRPO (DeepSeekMath, arXiv 2402.03300) trains a small instruct model with LoRA on GSM8K "
         "(arXiv 2110.14168) on one GPU when the precision follows the hardware: bf16 autocast on "
         "compute capability >= 8.0, fp16 + a gradient scaler on 7.x (a T4), never "
         "torch.cuda.is_bf16_supported(), which answers True on a T4 through emulation. "
         "On a CPU: bf16 autocast trains as fp32 does (held-out accuracy rises in both).")

PRESETS = {  # by GPU memory; precision is chosen by compute capability, not listed here
    "T4 16GB": {"min_gb": 14, "model": "Qwen/Qwen2.5-0.5B-Instruct", "prompts_per_step": 4,
                "num_generations": 8, "max_completion_length": 256, "expected_step_s": None},
    "L4/A10 24GB": {"min_gb": 22, "model": "Qwen/Qwen2.5-0.5B-Instruct", "prompts_per_step": 8,
                    "num_generations": 8, "max_completion_length": 384, "expected_step_s": None},
    "A100/H100 80GB": {"min_gb": 70, "model": "Qwen/Qwen2.5-0.5B-Instruct",
                       "prompts_per_step": 16, "num_generations": 16,
                       "max_completion_length": 512, "expected_step_s": None},
}
CPU = {"model": "tiny", "prompts_per_step": 8, "num_generations": 8, "learning_rate": 3e-4}


def pick_preset() -> tuple[str, dict]:
    """``(name, preset)`` for the GPU here (the largest that fits), or ``("cpu", CPU)`` with a
    printed message when there is none."""
    if not torch.cuda.is_available():
        print("No GPU here: running the small CPU configuration (the tiny policy on addition, "
              "fp32 vs bf16 autocast). On Colab: Runtime > Change runtime type > T4 GPU.")
        return "cpu", CPU
    gb = torch.cuda.get_device_properties(0).total_memory / 1024 ** 3
    fits = [(p["min_gb"], n) for n, p in PRESETS.items() if gb >= p["min_gb"]]
    name = max(fits)[1] if fits else "T4 16GB"
    print(f"{torch.cuda.get_device_name(0)} ({gb:.0f} GB): preset {name}, precision "
          f"{choose_precision('cuda')}")
    return name, PRESETS[name]


def gpu_trainer(preset: dict, task_path=None, max_steps: int = 200, run_name=None):
    """Preset's model + LoRA (pi_ref = the adapter switched off) on GSM8K (hub, or a local file
    in its schema), precision by the hardware."""
    model, tok = load_policy(preset["model"])
    task = gsm8k(task_path)
    kw = {k: preset[k] for k in ("prompts_per_step", "num_generations", "max_completion_length")}
    return GRPOTrainer(add_lora(model), tokenizer=tok, task=task, device="auto",
                       reward_funcs=[task.accuracy_reward], max_steps=max_steps,
                       learning_rate=1e-5, beta=0.0, run_name=run_name, **kw)


def run(fast: bool = True, seed: int = 0) -> tuple[dict, pd.DataFrame]:
    """The CPU stand-in: tiny GRPO in fp32 and in bf16 autocast from the same seed; returns
    ``({name: RunLog}, table)`` with held-out sampled accuracy before and after."""
    from labkit.runs.evaluate import accuracy
    steps, n_eval = (20, 200) if fast else (30, 500)
    logs, rows = {}, []
    for precision in ("fp32", "bf16"):
        tr = GRPOTrainer(CPU["model"], prompts_per_step=CPU["prompts_per_step"],
                         num_generations=CPU["num_generations"], max_steps=steps, seed=seed,
                         learning_rate=CPU["learning_rate"], track_kl=False,
                         precision=precision, save_steps=0, run_name=f"51_cpu_{precision}")
        probe = tr.task.heldout[:n_eval]
        before = accuracy(tr.model, tr.tokenizer, tr.task, probe, seed=7)
        logs[precision] = tr.train(progress=False)
        m = logs[precision].metrics
        rows.append({"precision": precision, "heldout before": before,
                     "heldout after": accuracy(tr.model, tr.tokenizer, tr.task, probe, seed=7),
                     "s/step": float(m["time/step"].mean()), "steps": steps})
    return logs, pd.DataFrame(rows)


def verdict(table: pd.DataFrame) -> str:
    """"reproduced" when bf16 autocast raises held-out accuracy as fp32 does (both > before)."""
    t = table.set_index("precision")
    gain = t["heldout after"] - t["heldout before"]
    ok = gain["bf16"] > 0 and gain["fp32"] > 0
    return (("reproduced" if ok else "not reproduced") +
            f": held-out gain fp32 {gain['fp32']:+.3f}, bf16 {gain['bf16']:+.3f} "
            f"({int(t['steps'].iloc[0])} steps, CPU)")
