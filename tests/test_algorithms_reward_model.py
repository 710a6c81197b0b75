"""The Bradley-Terry reward model: refusals, the readouts' closed forms, a TRL-signature reward,
near misses that are really wrong, and the shipped RM ranking the policy's own held-out near
misses (> 0.9) where the classic scalar head alone stays near chance."""

import random

import pytest
import torch

import labkit as lk
from labkit.algos.pairs import (
    NEAR_MISSES,
    demonstration_pairs,
    near_miss,
    near_miss_pairs,
    rollout_pairs,
)
from labkit.algos.reward_model import (
    RewardModel,
    RewardModelConfig,
    load_reward_model,
    train_reward_model,
)
from labkit.core import bradley_terry_loss
from labkit.models.rollout import completion_logprobs, tokenize_pairs


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"learning_rate": 0}, "learning_rate=0"),
        ({"batch_size": 0}, "batch_size=0"),
        ({"max_steps": 0}, "max_steps=0"),
        ({"warmup_steps": -1}, "warmup_steps=-1"),
        ({"lr_scheduler_type": "exp"}, "lr_scheduler_type=.exp."),
        ({"eval_every": 0}, "eval_every=0"),
    ],
)
def test_bad_reward_model_config_is_refused(kw, message):
    with pytest.raises(ValueError, match=message):
        RewardModelConfig(**kw)


def test_unknown_readout_and_missing_checkpoint_are_refused(tmp_path):
    with pytest.raises(ValueError, match="readout='mean'"):
        RewardModel("tiny", readout="mean")
    with pytest.raises(FileNotFoundError, match="tiny-addition-rm"):
        load_reward_model(str(tmp_path))


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


def test_logprob_readout_starts_as_the_policys_log_likelihood(tiny):
    """head+logprob with the zero head: r(x, y) = sum_t log pi(y_t | x, y_<t), eos included."""
    rm = RewardModel("tiny", readout="head+logprob").eval()
    policy, tok = tiny
    prompts, texts = ["12+30=", "07+05=", "99+99="], ["42", "1", "198"]
    b = tokenize_pairs(tok, list(zip(prompts, texts)))
    with torch.no_grad():
        want = (completion_logprobs(policy, b) * b.completion_mask).sum(-1)
        assert torch.allclose(rm(prompts, texts), want, atol=1e-4)


def test_near_misses_are_wrong_and_close():
    task, rng = lk.get_task("addition"), random.Random(0)
    for a in map(str, range(199)):
        for kind in NEAR_MISSES:
            wrong = near_miss(a, kind, rng)
            assert wrong.isdigit() and not task.verify(wrong, a), (a, kind, wrong)
            assert abs(len(wrong) - len(a)) <= 2, (a, kind, wrong)  # 103 -> 03 -> 3
    with pytest.raises(ValueError, match="kind='sign'"):
        near_miss("7", "sign", rng)


def test_the_shipped_rm_ranks_the_policys_own_heldout_near_misses(tmp_path, tiny):
    """The shipped policy's correct vs incorrect samples of held-out prompts (never trained on;
    sampled with a seed the build script did not use), e.g. 38+37= -> 75 vs 74."""
    task, rm = lk.get_task("addition"), load_reward_model("tiny-addition-rm")
    policy, tok = tiny
    near = rollout_pairs(policy, tok, task, task.heldout[:600], 8, seed=11)
    clear = demonstration_pairs(task, task.heldout[:300], seed=11)
    train_prompts = {e.prompt for e in task.train}
    assert len(near) > 300 and not {p["prompt"] for p in near} & train_prompts
    assert rm.accuracy(near) > 0.9 and rm.accuracy(clear) > 0.95
    rm.save(tmp_path)  # and a saved copy scores the same
    again = load_reward_model(str(tmp_path))
    assert torch.equal(again.pair_scores(near[:8])[0], rm.pair_scores(near[:8])[0])


@pytest.mark.slow
def test_a_short_training_run_learns_to_rank_near_misses(tiny):
    """60 steps of 32 near-miss pairs from train prompts, head+logprob readout, from the policy."""
    task = lk.get_task("addition")
    policy, tok = tiny
    held = rollout_pairs(policy, tok, task, task.heldout[:400], 8, seed=1)
    train = near_miss_pairs(task, task.train, 2, seed=0) + demonstration_pairs(task, task.train)
    random.Random(0).shuffle(train)
    _, log = train_reward_model(
        train,
        policy,
        tok,
        heldout=held,
        max_steps=60,
        batch_size=32,
        warmup_steps=10,
        lr_scheduler_type="cosine",
        eval_every=60,
        readout="head+logprob",
        progress=False,
    )
    m = log.metrics
    start = RewardModel("tiny", readout="head+logprob").accuracy(held)
    end = m["heldout/accuracy"].dropna().iloc[-1]
    assert m["margin"].tail(10).mean() > m["margin"].head(10).mean()  # r_w - r_l widens
    assert end > start + 0.05, (start, end)


@pytest.mark.slow
def test_the_scalar_head_alone_learns_clear_errors_not_near_misses(tiny):
    """InstructGPT's readout w^T h_eos on the same budget: clear errors yes, near misses no."""
    task = lk.get_task("addition")
    train = demonstration_pairs(task, task.sample_prompts(2048, random.Random(0)), seed=0)
    held = demonstration_pairs(task, task.heldout[:400], seed=1)
    rm, log = train_reward_model(train, heldout=held, max_steps=150, progress=False)
    m = log.metrics.dropna(subset=["heldout/accuracy"])
    assert m["heldout/accuracy"].iloc[0] < 0.8  # it starts close to chance
    assert rm.accuracy(held) > 0.9
    policy, tok = tiny
    near = rollout_pairs(policy, tok, task, task.heldout[:400], 8, seed=1)
    assert rm.accuracy(near) < 0.75  # 75 vs 74: the eos state alone has not learnt to add
