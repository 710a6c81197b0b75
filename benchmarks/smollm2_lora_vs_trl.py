"""SmolLM2-135M-Instruct GRPO + LoRA: labkit's step time against TRL's GRPOTrainer, in one run,
and the memory the adapter-off reference saves over a frozen copy.

Same model (``load_policy("smollm2-offline")``), same adapter (LoRA r=16, alpha=32, every linear
layer), same config through :func:`labkit.trl_config`: P prompts x G generations of at most L
tokens from the shipped short prompts, loss "dapo", beta 0.04 (both take pi_ref from the model
with the adapter disabled), lr 1e-4, length-target reward. TRL runs without activation
checkpointing, as labkit does. Prints the median seconds per step after warm-up, the ratio
labkit / TRL, and the reference-model memory. Timings are noisy on a shared machine.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/smollm2_lora_vs_trl.py [--steps 6]
"""

import argparse
import statistics
import tempfile

import torch
from timing import step_times, trl_clock

import labkit as lk
from labkit.models.policy import frozen_copy
from labkit.models.smollm2 import smollm2_folder

P, G, L = 2, 4, 16


def config(steps: int) -> lk.GRPOConfig:
    return lk.GRPOConfig(
        num_generations=G,
        prompts_per_step=P,
        max_completion_length=L,
        loss_type="dapo",
        beta=0.04,
        learning_rate=1e-4,
        max_steps=steps,
        seed=0,
    )


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def memory() -> dict:
    """Bytes a frozen reference copy costs (parameters, and measured RSS growth) vs the adapter."""
    model, _ = lk.load_policy("smollm2-offline")
    sum(float(p.detach().sum()) for p in model.parameters())  # page in the mmapped weights
    before = rss_mib()
    ref = frozen_copy(model)
    grown = rss_mib() - before
    copy_mib = sum(p.numel() * p.element_size() for p in ref.parameters()) / 2**20
    del ref
    policy = lk.models.add_lora(model, r=16, alpha=32)
    adapter = sum(p.numel() * p.element_size() for p in policy.parameters() if p.requires_grad)
    return {"copy_params_mib": copy_mib, "copy_rss_mib": grown, "adapter_mib": adapter / 2**20}


def labkit_times(steps: int) -> list[float]:
    model, tok = lk.load_policy("smollm2-offline")
    policy = lk.models.add_lora(model, r=16, alpha=32)
    tr = lk.GRPOTrainer(
        policy,
        tokenizer=tok,
        reward_funcs=[lk.length_target],
        task="short_prompts",
        config=config(steps),
        diagnostics=4,
    )
    assert tr.ref_model is None
    return step_times(tr.step, steps)


def trl_times(steps: int) -> list[float]:
    from datasets import Dataset
    from peft import LoraConfig
    from trl import GRPOTrainer

    task = lk.get_task("short_prompts")
    data = Dataset.from_dict({"prompt": [e.prompt for e in task.train]})
    clock = trl_clock()

    with tempfile.TemporaryDirectory() as out:
        args = lk.trl_config(
            config(steps), output_dir=out, task=task, logging_steps=10**6, log_completions=False
        )
        lora = LoraConfig(
            r=16,
            lora_alpha=32,
            target_modules="all-linear",
            lora_dropout=0.0,
            task_type="CAUSAL_LM",
        )
        tok = lk.load_policy("smollm2-offline")[1]
        GRPOTrainer(
            model=str(smollm2_folder()),
            reward_funcs=lk.length_target,
            args=args,
            train_dataset=data,
            processing_class=tok,
            peft_config=lora,
            callbacks=[clock],
        ).train()
    return clock.times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--warmup", type=int, default=1)
    a = ap.parse_args()
    print(
        f"torch threads: {torch.get_num_threads()}; {P} prompts x {G} generations, "
        f"<= {L} tokens, LoRA r=16 all-linear, beta 0.04"
    )
    mem = memory()
    print(
        f"reference model: frozen copy {mem['copy_params_mib']:.0f} MiB of parameters "
        f"(RSS grew {mem['copy_rss_mib']:.0f} MiB) vs adapter-off 0 MiB extra; "
        f"the adapter itself is {mem['adapter_mib']:.1f} MiB"
    )
    ours = statistics.median(labkit_times(a.steps)[a.warmup :])
    theirs = statistics.median(trl_times(a.steps)[a.warmup :])
    print(f"labkit GRPO+LoRA step: {ours:.2f} s (median; all diagnostics)")
    print(f"TRL GRPOTrainer+LoRA step: {theirs:.2f} s (median, same work)")
    print(f"ratio labkit/TRL: {ours / theirs:.2f}")


if __name__ == "__main__":
    main()
