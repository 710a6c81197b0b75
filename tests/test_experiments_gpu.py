"""The GPU lab's presets and CPU fallback (labs/51_gpu_gsm8k_lora.ipynb)."""

from __future__ import annotations

import types

import pytest
import torch

from labkit.experiments import gpu


@pytest.mark.parametrize(
    "gb, cap, name, prec",
    [
        (15, (7, 5), "T4 16GB", "fp16"),
        (24, (8, 9), "L4/A10 24GB", "bf16"),
        (80, (8, 0), "A100/H100 80GB", "bf16"),
    ],
)
def test_the_preset_follows_the_gpu(monkeypatch, capsys, gb, cap, name, prec):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(
        torch.cuda,
        "get_device_properties",
        lambda i: types.SimpleNamespace(total_memory=gb * 1024**3),
    )
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i: "GPU")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda d=None: cap)
    got, preset = gpu.pick_preset()
    assert got == name and f"precision {prec}" in capsys.readouterr().out
    assert preset["expected_step_s"] is None  # not measured without a GPU


def test_no_gpu_falls_back_to_the_cpu_configuration_with_a_message(capsys):
    name, preset = gpu.pick_preset()  # the suite runs without a GPU
    assert name == "cpu" and preset["model"] == "tiny"
    assert "No GPU here" in capsys.readouterr().out


@pytest.mark.parametrize("model", list(gpu.TABLES))
def test_every_preset_fits_its_gpu_class_by_the_memory_estimate(model):
    table = gpu.preset_table(model)
    assert (table["est_gb"] <= table["min_gb"]).all(), table[["min_gb", "est_gb"]]
    assert table["gradient_checkpointing"].all() and table["expected_step_s"].isna().all()


def test_the_preset_architectures_have_the_published_sizes():
    """Qwen2.5-0.5B: 494,032,768 parameters; SmolLM2-360M: 361,821,120 (tied embeddings);
    SmolLM2-135M: 134,515,008, the count of the dequantized GGUF (tests/test_smollm2.py)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    sizes = {}
    for name, (kind, arch) in gpu.ARCHS.items():
        with torch.device("meta"):
            net = AutoModelForCausalLM.from_config(AutoConfig.for_model(kind, **arch))
        sizes[name] = sum(p.numel() for p in net.parameters())
    assert sizes == {
        gpu.MODELS["qwen2.5-0.5b"]: 494_032_768,
        gpu.MODELS["smollm2-360m"]: 361_821_120,
        gpu.MODELS["smollm2-135m"]: 134_515_008,
    }


def test_smollm2_presets_and_the_offline_message(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(
        torch.cuda,
        "get_device_properties",
        lambda i: types.SimpleNamespace(total_memory=24 * 1024**3),
    )
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda i: "GPU")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda d=None: (8, 9))
    name, preset = gpu.pick_preset("smollm2-360m")
    assert name == "L4/A10 24GB" and preset["model"] == "HuggingFaceTB/SmolLM2-360M-Instruct"
    with pytest.raises(ValueError, match="model='gpt2'"):
        gpu.pick_preset("gpt2")
    monkeypatch.undo()
    with pytest.raises(ValueError, match="Hugging Face hub, which is not reachable here"):
        gpu.gpu_trainer(preset)  # offline: a clear message, not a hub trace


def test_a_random_policy_has_the_architecture_and_the_tokenizers_special_ids():
    model, tok = gpu.random_policy("smollm2-135m", device="meta", num_hidden_layers=2)
    cfg = model.config
    assert (cfg.num_hidden_layers, cfg.num_key_value_heads, cfg.rope_parameters["rope_theta"]) == (
        2,
        3,
        1e5,
    )
    assert (cfg.pad_token_id, cfg.eos_token_id) == (tok.pad_token_id, tok.eos_token_id)
    assert model.lm_head.weight is model.model.embed_tokens.weight  # tied, as SmolLM2's
    with pytest.raises(ValueError, match="random architectures exist for"):
        gpu.random_policy("gpt2")
