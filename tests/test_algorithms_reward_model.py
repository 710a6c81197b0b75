"""The Bradley-Terry reward model: refusals, a TRL-signature reward, > 0.9 held-out pair accuracy."""

import pytest
import torch

import labkit as lk
from labkit.core import bradley_terry_loss
from labkit.pairs import demonstration_pairs
from labkit.reward_model import RewardModel, RewardModelConfig, train_reward_model


@pytest.mark.parametrize("kw, message", [
    ({"learning_rate": 0}, "learning_rate=0"), ({"batch_size": 0}, "batch_size=0"),
    ({"max_steps": 0}, "max_steps=0")])
def test_bad_reward_model_config_is_refused(kw, message):
    with pytest.raises(ValueError, match=message):
        RewardModelConfig(**kw)


def test_scores_start_equal_and_the_reward_has_trls_signature():
    rm = RewardModel("tiny")
    pairs = [{"prompt": "12+30=", "chosen": "42", "rejected": "7"}] * 2
    w, lo = rm.pair_scores(pairs)
    assert w.shape == (2,) and torch.equal(w, lo)  # zero-initialised head: r = 0
    assert bradley_terry_loss(w, lo)[0].item() == pytest.approx(0.6931, abs=1e-4)
    fn = rm.as_reward()
    out = fn(["42", "7"], prompts=["12+30=", "12+30="], answer=["42", "42"])
    assert out == [0.0, 0.0] and fn.__name__ == "reward_model"
    tr = lk.GRPOTrainer(reward_funcs=[fn], num_generations=2, prompts_per_step=2, max_steps=1)
    assert "rewards/reward_model/mean" in tr.step()


@pytest.mark.slow
def test_reward_model_ranks_heldout_pairs_above_0_9():
    """Reference answers vs clearly wrong numbers on unseen prompts; 150 steps of 32 pairs."""
    task = lk.get_task("addition")
    import random
    train = demonstration_pairs(task, task.sample_prompts(2048, random.Random(0)), seed=0)
    held = demonstration_pairs(task, task.heldout[:400], seed=1)
    rm, log = train_reward_model(train, heldout=held, max_steps=150, progress=False)
    m = log.metrics.dropna(subset=["heldout/accuracy"])
    assert m["heldout/accuracy"].iloc[0] < 0.8  # it starts close to chance
    assert rm.accuracy(held) > 0.9
