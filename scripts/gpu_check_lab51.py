"""Lab 51's GPU branch (labs/51_gpu_gsm8k_lora.ipynb, "On a GPU: the real run") for a few steps,
offline, as the GPU check's ``lab51`` phase. The lab's own calls: ``gpu.pick_preset()`` (the
preset this GPU gets), ``gpu.preset_table`` (its memory estimate), ``gpu.gpu_trainer`` (the
preset's model + LoRA on GSM8K, precision by the hardware), ``memory_report``, then steps; the
dashboard widget is left out (no ipywidgets there). Where the lab reads the hub, this reads:

- the preset's model: its architecture (``gpu.ARCHS``) with random weights, saved to a folder
  (step time and memory do not depend on the weights; its completions run to the length limit);
- its tokenizer: SmolLM2's, when carried (``.gpu-wheels/smollm2-135m``, ``make gpu-wheels``),
  else the tiny policy's character tokenizer (longer prompts: said in the row);
- GSM8K: rows in GSM8K's schema made here (question; answer ending in ``#### <number>``).

Rows to ``--json``: one when the trainer is built (preset, estimates), then one after each step
with the figures so far (the last is the result). ``--cpu``: the same calls at tiny sizes (the T4 preset,
a 1-layer narrow model, 2 x 2 completions of 8 tokens, 2 steps): a dry run of this script.

    python scripts/gpu_check_lab51.py --json lab51.jsonl [--steps 3] [--cpu]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import random
import statistics
import sys
import tempfile
import time

import torch

ROOT = pathlib.Path(__file__).resolve().parent.parent
TOKENIZER = ROOT / os.environ.get("GPU_CARRY", ".gpu-wheels") / "smollm2-135m"
TINY = {  # --cpu: the preset's architecture family, shrunk
    "num_hidden_layers": 1,
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_attention_heads": 2,
    "num_key_value_heads": 1,
}
TEMPLATES = [
    (
        (
            "A baker bakes {a} trays of {b} rolls each morning and gives away {c} rolls. "
            "How many rolls are left?"
        ),
        "{a} x {b} = <<{a}*{b}={p}>>{p} rolls.\n{p} - {c} = <<{p}-{c}={r}>>{r}\n#### {r}",
        lambda a, b, c: (a * b, a * b - c),
    ),
    (
        (
            "Maria reads {a} pages a day for {b} days, then {c} more pages on Sunday. How "
            "many pages did she read in all?"
        ),
        "{a} x {b} = <<{a}*{b}={p}>>{p} pages.\n{p} + {c} = <<{p}+{c}={r}>>{r}\n#### {r}",
        lambda a, b, c: (a * b, a * b + c),
    ),
]


def gsm8k_rows(n: int = 64, seed: int = 0) -> list[dict]:
    """``n`` word problems in GSM8K's schema (``question``, ``answer`` ending ``#### r``)."""
    rng, rows = random.Random(seed), []
    for i in range(n):
        question, answer, solve = TEMPLATES[i % len(TEMPLATES)]
        a, b, c = rng.randint(3, 19), rng.randint(2, 12), rng.randint(1, 20)
        p, r = solve(a, b, c)
        q, ans = question.format(a=a, b=b, c=c), answer.format(a=a, b=b, c=c, p=p, r=r)
        rows.append({"question": q, "answer": ans})
    return rows


def tokenizer():
    """``(tokenizer, name)``: SmolLM2's when carried, else the character tokenizer."""
    from transformers import AutoTokenizer

    from labkit.models.policy import char_tokenizer

    if (TOKENIZER / "tokenizer.json").exists():
        return AutoTokenizer.from_pretrained(TOKENIZER), "SmolLM2-135M's (carried)"
    return char_tokenizer(), f"the tiny policy's characters ({TOKENIZER} not carried)"


def preset_for(cpu: bool):
    """``(name, preset, est_gb)``: the lab's preset for this GPU and its memory estimate."""
    from labkit.experiments import gpu

    if cpu:
        small = {"prompts_per_step": 2, "num_generations": 2, "max_completion_length": 8}
        return "T4 16GB, shrunk (--cpu)", {**gpu.PRESETS["T4 16GB"], **small}, None
    name, preset = gpu.pick_preset()
    if name == "cpu":
        raise SystemExit("no GPU here: run with --cpu for a dry run")
    table = gpu.preset_table("qwen2.5-0.5b")
    return name, preset, float(table.loc[name, "est_gb"])


def random_folder(model_id: str, tok, folder: pathlib.Path, cpu: bool) -> pathlib.Path:
    """``model_id``'s architecture with random weights, saved with ``tok`` to ``folder``."""
    from labkit.experiments import gpu

    torch.manual_seed(0)
    device = "cpu" if cpu else "cuda"  # initialised on the GPU: seconds, not a minute
    model, _ = gpu.random_policy(model_id, tokenizer=tok, device=device, **(TINY if cpu else {}))
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def build(cpu: bool):
    """``(trainer, row)``: the lab's trainer for this GPU's preset, and what is known before a
    step (the preset, the estimates, the tokenizer)."""
    from labkit.experiments import gpu
    from labkit.models.memory import memory_report

    name, preset, est_gb = preset_for(cpu)
    tok, tok_name = tokenizer()
    with tempfile.TemporaryDirectory() as tmp:
        folder = random_folder(preset["model"], tok, pathlib.Path(tmp), cpu)
        t0 = time.perf_counter()
        tr = gpu.gpu_trainer({**preset, "model": str(folder)}, task_path=gsm8k_rows())
        build_s = time.perf_counter() - t0
    row = {
        "preset": name,
        "architecture": preset["model"],
        "weights": "random",
        "tokenizer": tok_name,
        "prompt_tokens_max": max(len(tok(e.prompt)["input_ids"]) for e in tr.task.train),
        "precision": tr.precision,
        "gradient_checkpointing": preset["gradient_checkpointing"],
        "B": preset["prompts_per_step"] * preset["num_generations"],
        "max_completion_length": preset["max_completion_length"],
        "est_gb_preset_table": est_gb,
        "memory_report": memory_report(tr),
        "build_s": build_s,
    }
    return tr, row


def measure(tr, row: dict, steps: int, emit) -> None:
    """``steps`` steps; after each, ``emit`` the row with the figures so far (a run cut off
    at its limit keeps the steps it finished). The first step warms the kernels up."""
    cuda = tr.device.type == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        tr.step()
        times.append(time.perf_counter() - t0)
        tokens = (tr.log.metrics["len/mean"] * row["B"]).tolist()
        step_s = statistics.median(times[1:] or times)
        row.update(
            steps_done=len(times),
            step_times=times,
            s_per_step=step_s,
            generated_tokens_per_s=statistics.mean(tokens[1:] or tokens) / step_s,
            peak_gb=torch.cuda.max_memory_allocated() / 2**30 if cuda else None,
        )
        emit(row)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", type=pathlib.Path, default=None)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--cpu", action="store_true", help="a dry run of this script on the CPU")
    args = ap.parse_args()

    def emit(row: dict) -> None:
        print(json.dumps(row, default=str), flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(row, default=str) + "\n")

    tr, row = build(args.cpu)
    emit({**row, "steps_done": 0})
    measure(tr, row, 2 if args.cpu else args.steps, emit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
