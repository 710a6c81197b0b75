"""labkit.policy_loss == TRL 1.16 GRPOTrainer._compute_loss: loss value and parameter gradients.

Both sides see the same tiny randomly initialised Llama, the same prompts and completions (with
unequal lengths), the same advantages and the same old / reference log-probs. The old log-probs
are the current ones plus noise, so both clip sides (and CISPO's cap) are exercised. TRL runs its
own loss code (``_compute_loss`` on a hand-built inputs dict); labkit computes log-probs from the
model's logits with ``token_logprobs`` and calls ``policy_loss``.
"""

import pytest
import torch
from datasets import Dataset
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
from trl import GRPOConfig, GRPOTrainer

from labkit.core import group_advantages, policy_loss, token_logprobs

B, P, C, V, G = 8, 5, 7, 50, 4  # sequences, prompt tokens, completion tokens, vocab, group size


def tiny_tokenizer():
    vocab = {"<pad>": 0, "<bos>": 1, "<eos>": 2}
    for ch in "abcdefghijklmnopqrstuvwxyz0123456789 +=?":
        vocab[ch] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", bos_token="<bos>", eos_token="<eos>"
    )


def tiny_model():
    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=V,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=64,
        pad_token_id=0,
        bos_token_id=1,
        eos_token_id=2,
    )
    return LlamaForCausalLM(cfg)


def make_trainer(model_dir, **cfg):
    """TRL loads the policy (and, when beta > 0, its reference copy) from a local folder."""
    args = GRPOConfig(
        output_dir=str(model_dir / "out"),
        bf16=False,
        use_cpu=True,
        report_to=[],
        activation_checkpointing=False,
        per_device_train_batch_size=B,
        num_generations=G,
        max_completion_length=C + 3,
        **cfg,
    )
    trainer = GRPOTrainer(
        model=str(model_dir),
        reward_funcs=lambda completions, **kw: [0.0] * len(completions),
        args=args,
        train_dataset=Dataset.from_dict({"prompt": ["1+1="]}),
        processing_class=tiny_tokenizer(),
    )
    trainer.current_gradient_accumulation_steps = 1  # set by Trainer's loop; one micro-batch here
    trainer.model.train()
    return trainer


def make_batch(model):
    g = torch.Generator().manual_seed(1)
    prompt_ids = torch.randint(3, V, (B, P), generator=g)
    prompt_mask = torch.ones(B, P, dtype=torch.long)
    prompt_mask[::3, :2] = 0  # some left padding, as TRL pads prompts
    prompt_ids[prompt_mask == 0] = 0
    lengths = torch.tensor([7, 2, 5, 1, 7, 3, 6, 4])  # unequal completion lengths
    completion_mask = (torch.arange(C) < lengths[:, None]).long()
    completion_ids = torch.randint(3, V, (B, C), generator=g) * completion_mask
    with torch.no_grad():
        logp = labkit_logps(model, prompt_ids, prompt_mask, completion_ids, completion_mask)
    rewards = torch.randn(B, generator=g)
    rewards[:G] = rewards[:G].round()  # one group with ties
    return {
        "prompt_ids": prompt_ids,
        "prompt_mask": prompt_mask,
        "completion_ids": completion_ids,
        "completion_mask": completion_mask,
        "advantages": group_advantages(rewards, G),
        "old_per_token_logps": logp + 0.3 * torch.randn(B, C, generator=g),  # off-policy
        "ref_per_token_logps": logp + 0.5 * torch.randn(B, C, generator=g),
        "num_items_in_batch": completion_mask.sum() + 5,  # as if the generation batch were larger
    }


def labkit_logps(model, prompt_ids, prompt_mask, completion_ids, completion_mask, temperature=1.0):
    ids = torch.cat([prompt_ids, completion_ids], 1)  # [B, P + C]
    attn = torch.cat([prompt_mask, completion_mask], 1)  # [B, P + C]
    logits = model(input_ids=ids, attention_mask=attn).logits[:, P - 1 : -1]  # [B, C, V]
    return token_logprobs(logits, completion_ids, temperature)  # [B, C]


CASES = [  # (TRL config, labkit kwargs not implied by the config)
    ({"loss_type": "grpo", "beta": 0.0}, {}),
    ({"loss_type": "grpo", "beta": 0.1}, {}),
    (
        {"loss_type": "grpo", "beta": 0.1, "use_bias_correction_kl": False},
        {"kl_is_correction": False},
    ),
    ({"loss_type": "bnpo", "beta": 0.0}, {}),
    ({"loss_type": "bnpo", "beta": 0.1, "epsilon_high": 0.28}, {}),
    ({"loss_type": "dr_grpo", "beta": 0.0}, {}),
    ({"loss_type": "dr_grpo", "beta": 0.1}, {}),
    ({"loss_type": "dapo", "beta": 0.0, "epsilon_high": 0.28}, {}),
    ({"loss_type": "dapo", "beta": 0.1, "epsilon_high": 0.28}, {}),
    ({"loss_type": "cispo", "beta": 0.0, "epsilon_high": 1.2}, {}),
    ({"loss_type": "cispo", "beta": 0.1, "epsilon_high": 5.0}, {}),
    (
        {
            "loss_type": "grpo",
            "beta": 0.0,
            "importance_sampling_level": "sequence",
            "epsilon": 3e-2,
        },
        {},
    ),
    (
        {
            "loss_type": "grpo",
            "beta": 0.1,
            "importance_sampling_level": "sequence",
            "epsilon": 3e-2,
        },
        {},
    ),
    (
        {
            "loss_type": "dapo",
            "beta": 0.1,
            "importance_sampling_level": "sequence",
            "epsilon": 3e-2,
        },
        {},
    ),
    ({"loss_type": "grpo", "beta": 0.1, "delta": 1.5}, {}),  # INTELLECT-2 two-sided clip
]


@pytest.fixture(scope="module")
def tmp_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny-llama")
    tiny_model().save_pretrained(path)
    tiny_tokenizer().save_pretrained(path)
    return path


@pytest.mark.parametrize("cfg,extra", CASES, ids=[str(sorted(c.items())) for c, _ in CASES])
def test_policy_loss_equals_trl(cfg, extra, tmp_dir):
    trainer = make_trainer(tmp_dir, **cfg)
    model, args = trainer.model, trainer.args
    inputs = make_batch(model)
    params = [p for p in model.parameters() if p.requires_grad]

    trl_loss = trainer._compute_loss(model, inputs)
    trl_grads = torch.autograd.grad(trl_loss, params)

    logp = labkit_logps(
        model,
        inputs["prompt_ids"],
        inputs["prompt_mask"],
        inputs["completion_ids"],
        inputs["completion_mask"],
        args.temperature,
    )
    loss, stats = policy_loss(
        logp,
        inputs["old_per_token_logps"],
        inputs["advantages"],
        inputs["completion_mask"],
        loss_type=args.loss_type,
        epsilon=args.epsilon,
        epsilon_high=args.epsilon_high,
        importance_sampling_level=args.importance_sampling_level,
        max_completion_length=args.max_completion_length,
        ref_logp=inputs["ref_per_token_logps"] if args.beta else None,
        beta=args.beta,
        kl_estimator="k3",
        num_items_in_batch=inputs["num_items_in_batch"],
        delta=args.delta,
        **extra,
    )
    grads = torch.autograd.grad(loss, params)

    torch.testing.assert_close(loss, trl_loss, atol=1e-5, rtol=1e-5)
    for ours, theirs in zip(grads, trl_grads):
        torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)
    assert sum(g.abs().sum() for g in grads) > 0  # a real gradient, not 0 == 0

    metrics = {k: v[-1] for k, v in trainer._metrics["train"].items()}
    if args.beta:
        assert stats["kl"].item() == pytest.approx(metrics["kl"], abs=1e-5)
    if args.loss_type == "cispo":
        assert stats["clip/ratio_high"].item() == pytest.approx(
            metrics["cispo_clip_ratio"], abs=1e-6
        )
    else:
        for ours, theirs in (
            ("ratio_low", "low_mean"),
            ("ratio_high", "high_mean"),
            ("region", "region_mean"),
        ):
            assert stats[f"clip/{ours}"].item() == pytest.approx(
                metrics[f"clip_ratio/{theirs}"], abs=1e-6
            )


def test_the_batch_exercises_clipping(tmp_dir):
    """Guard the parity test against a batch where clipping never happens (then it proves less)."""
    trainer = make_trainer(tmp_dir, loss_type="grpo")
    inputs = make_batch(trainer.model)
    logp = labkit_logps(
        trainer.model,
        inputs["prompt_ids"],
        inputs["prompt_mask"],
        inputs["completion_ids"],
        inputs["completion_mask"],
    )
    _, st = policy_loss(
        logp, inputs["old_per_token_logps"], inputs["advantages"], inputs["completion_mask"]
    )
    assert st["clip/ratio_low"] > 0.05 and st["clip/ratio_high"] > 0.05
    _, st = policy_loss(
        logp,
        inputs["old_per_token_logps"],
        inputs["advantages"],
        inputs["completion_mask"],
        loss_type="cispo",
        epsilon_high=1.2,
    )
    assert st["clip/ratio_high"] > 0.05
    _, st = policy_loss(
        logp,
        inputs["old_per_token_logps"],
        inputs["advantages"],
        inputs["completion_mask"],
        importance_sampling_level="sequence",
        epsilon=3e-2,
    )
    assert 0 < st["clip/region"] < 1
    _, st = policy_loss(
        logp,
        inputs["old_per_token_logps"],
        inputs["advantages"],
        inputs["completion_mask"],
        delta=1.5,
    )
    assert st["clip/delta"] > 0.02
