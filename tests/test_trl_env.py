"""labkit's environments in TRL 1.16: TRL's masked loss on labkit's episodes equals
labkit's, and TRL trains a few steps with labkit's episode loop as ``rollout_func``."""

import pytest
import torch
from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer

from labkit.algos.multiturn import MultiTurnGRPOTrainer
from labkit.envs import CalcTask, Calculator, tool_reward
from labkit.integrations.trl_env import rollout_func, trl_inputs
from labkit.models.policy import BUILTIN
from labkit.models.rollout import completion_logprobs

torch.set_num_threads(1)
PATH = str(BUILTIN["tiny-tools"])
G, P, L = 4, 8, 20


def _trl(tmp_path, **cfg):
    args = GRPOConfig(
        output_dir=str(tmp_path / "out"),
        bf16=False,
        use_cpu=True,
        report_to=[],
        activation_checkpointing=False,
        per_device_train_batch_size=G * 2,
        num_generations=G,
        max_completion_length=L,
        **cfg,
    )
    data = Dataset.from_dict({"prompt": ["37*48=", "3+4="], "answer": ["1776", "7"]})
    return GRPOTrainer(
        model=PATH,
        reward_funcs=[tool_reward],
        args=args,
        train_dataset=data,
        rollout_func=rollout_func(Calculator, CalcTask.protocol, 2),
    )


CASES = [("grpo", 0.0), ("grpo", 0.1), ("bnpo", 0.0), ("dr_grpo", 0.1), ("dapo", 0.1)]


@pytest.mark.parametrize("loss_type,beta", CASES)
def test_trl_masked_loss_equals_labkit_on_the_same_episodes(tmp_path, loss_type, beta):
    trl = _trl(tmp_path, loss_type=loss_type, beta=beta, epsilon_high=0.28)
    trl.current_gradient_accumulation_steps = 1
    model, tok = trl.model, trl.processing_class
    ours = MultiTurnGRPOTrainer(
        model,
        env=Calculator,
        reward_funcs=[tool_reward],
        task=CalcTask(),
        tokenizer=tok,
        num_generations=G,
        prompts_per_step=P,
        max_completion_length=L,
        max_turns=2,
        beta=beta,
        loss_type=loss_type,
        epsilon_high=0.28,
        track_kl=False,
        seed=0,
    )
    r = ours.prepare(ours.collect())
    assert (r.completion_mask * (1 - r.env_mask)).sum() > 0  # tools answered: tokens masked
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        logp0 = completion_logprobs(model, r)  # [B, T]
    r.old_logp = logp0 + 0.3 * torch.randn(logp0.shape, generator=g)  # off-policy: clipping
    r.ref_logp = logp0 + 0.5 * torch.randn(logp0.shape, generator=g) if beta else None
    model.train()
    trl_loss = trl._compute_loss(model, trl_inputs(r, r.advantages, r.old_logp, r.ref_logp))
    loss, stats = ours.loss(completion_logprobs(model, r), r)
    torch.testing.assert_close(loss, trl_loss, atol=1e-5, rtol=1e-5)
    assert stats["per_token"]["weight"][r.env_mask == 0].abs().max() == 0
    unmasked = r.loss_mask.clone()
    r.loss_mask = r.completion_mask.float()
    assert (ours.loss(completion_logprobs(model, r), r)[0] - trl_loss).abs() > 1e-5
    r.loss_mask = unmasked


def test_trl_trains_with_labkit_episodes_as_rollout_func(tmp_path):
    trl = _trl(tmp_path, max_steps=2, learning_rate=1e-4, logging_steps=1)
    env_tokens, inner = [], trl.rollout_func

    def counting(prompts, trainer):
        out = inner(prompts, trainer)
        env_tokens.append(sum(len(m) - sum(m) for m in out["env_mask"]))
        return out

    trl.rollout_func = counting
    before = [p.detach().clone() for p in trl.model.parameters()]
    trl.train()
    hist = [h for h in trl.state.log_history if "loss" in h]
    assert len(hist) == 2
    assert len(env_tokens) == 2 and sum(env_tokens) > 0  # TRL got episodes with tool answers
    assert any((p.detach() - b).abs().max() > 0 for p, b in zip(trl.model.parameters(), before))
