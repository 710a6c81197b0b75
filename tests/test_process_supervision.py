"""Process supervision (labkit.core.process, labkit.rewards.process, labkit.algos.process,
labkit.algos.verifier): step labels, DeepSeekMath's process advantages against hand values,
PPO's per-token hook, and a verifier that learns step labels."""

import random

import pytest
import torch

import labkit as lk
from labkit.algos.process import ProcessGRPOTrainer, process_token_score
from labkit.algos.verifier import solution_score, train_verifier, verifier_quality
from labkit.core.process import process_advantages, step_token_rewards
from labkit.models.rollout import tokenize_pairs
from labkit.rewards.process import process_steps, step_correctness, step_tensors
from labkit.tasks.scratchpad import target

RIGHT = "<think>3+5=8 8+8=16</think><answer>16</answer>"
WRONG_STEP = "<think>3+5=9 9+8=17</think><answer>17</answer>"
DIRECT = "<answer>16</answer>"


def test_process_steps_label_each_step_then_the_answer():
    assert [s.label for s in process_steps(RIGHT, "3+5+8=")] == [True, True, True]
    assert [s.label for s in process_steps(WRONG_STEP, "3+5+8=")] == [False, False, False]
    lucky = "<think>3+5=9 9+8=16</think><answer>16</answer>"  # wrong steps, right answer
    assert [s.label for s in process_steps(lucky, "3+5+8=")] == [False, False, True]
    assert [(s.end, s.label) for s in process_steps(DIRECT, "3+5+8=")] == [(len(DIRECT), True)]
    assert RIGHT[process_steps(RIGHT, "3+5+8=")[0].end] == "8"  # the step's last character
    assert step_correctness([RIGHT, lucky, DIRECT], ["3+5+8="] * 3) == [1.0, 0.0, None]
    ends, labels, valid = step_tensors([RIGHT, DIRECT], ["3+5+8="] * 2, T=10)
    assert valid.tolist() == [[True] * 3, [True, False, False]]
    assert labels.tolist() == [[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]]
    assert ends.max() <= 9  # clamped to the last token


def test_process_advantages_by_hand():
    # one group of G = 2: steps rewards {1, 0} and {1}; mean 2/3, std (n - 1) sqrt(1/3)
    ends = torch.tensor([[1, 3], [2, 0]])
    rew = torch.tensor([[1.0, 0.0], [1.0, 0.0]])
    valid = torch.tensor([[True, True], [True, False]])
    A = process_advantages(ends, rew, valid, G=2, T=5)
    mu, sd = 2 / 3, (((1 / 3) ** 2 * 2 + (2 / 3) ** 2) / 2) ** 0.5
    hi, lo = (1 - mu) / (sd + 1e-4), (0 - mu) / (sd + 1e-4)
    want = [[hi + lo, hi + lo, lo, lo, 0.0], [hi, hi, hi, 0.0, 0.0]]
    assert torch.allclose(A, torch.tensor(want), atol=1e-5)
    same = process_advantages(ends, torch.ones(2, 2), valid, G=2, T=5)  # no spread: no signal
    assert same.abs().max() == 0
    assert step_token_rewards(ends, rew, valid, 5).tolist() == [[0, 1, 0, 0, 0], [0, 0, 1, 0, 0]]


def rollout_of(trainer, prompts, completions):
    r = tokenize_pairs(trainer.tokenizer, list(zip(prompts, completions)))
    r.old_logp = torch.zeros(r.completion_ids.shape)  # [B, T]
    r.loss_mask = r.completion_mask.float()  # [B, T]
    return r


def test_ppo_token_score_puts_step_rewards_on_step_ends():
    t = lk.PPOTrainer(
        "tiny",
        ["answer_match"],
        task="scratchpad",
        max_steps=1,
        beta=0.0,
        prompts_per_step=2,
        num_generations=1,
        track_kl=False,
    )
    r = rollout_of(t, ["3+5+8=", "3+5+8="], [RIGHT, WRONG_STEP])
    r.rewards = torch.tensor([1.0, 0.0])
    plain = t.token_rewards(r)
    t.token_score = process_token_score(0.25)
    dense = t.token_rewards(r)
    extra = dense - plain  # [B, T]
    ends = [s.end for s in process_steps(RIGHT, "3+5+8=")[:-1]]
    assert extra[0].nonzero().squeeze(-1).tolist() == ends and extra[0].sum() == 0.5
    assert extra[1].abs().sum() == 0  # wrong steps earn nothing
    assert plain[0, len(RIGHT)] == 1.0 and dense[0, len(RIGHT)] == 1.0  # the outcome stays


def test_process_grpo_advantage_falls_after_a_wrong_step():
    t = ProcessGRPOTrainer(
        "tiny",
        ["answer_match"],
        task="scratchpad",
        max_steps=1,
        prompts_per_step=1,
        num_generations=2,
        track_kl=False,
    )
    half = "<think>3+5=8 8+8=17</think><answer>17</answer>"  # step 1 right, then wrong
    r = rollout_of(t, ["3+5+8="] * 2, [RIGHT, half])
    r.rewards = torch.tensor([1.0, 0.0])
    r.examples = [t.task.example([3, 5, 8])] * 2
    t.prepare(r)
    A = r.advantages  # [2, T]
    e1 = process_steps(half, "3+5+8=")[0].end
    assert A[0, 0] > 0 > A[1, 0]  # the wrong solution's start is below the right one's
    assert A[1, e1 + 1] < A[1, e1]  # past its last right step, the advantage drops


def test_solution_score_and_bad_options():
    assert solution_score([0.9, 0.2], "orm") == 0.2
    with pytest.raises(ValueError, match="aggregate"):
        solution_score([0.5], "prm", "mean")
    with pytest.raises(ValueError, match="kind"):
        lk.algos.verifier.StepVerifier(*lk.load_policy("tiny"), kind="xrm")


def corrupted(ops, rng):
    """A scratchpad whose steps go wrong from a random step on (or a right one)."""
    text = target(ops)
    k = rng.randrange(len(ops))  # k = len(ops) - 1: left right
    if k == len(ops) - 1:
        return text
    steps = process_steps(text, "+".join(map(str, ops)) + "=")
    end = steps[k].end
    return text[:end] + str((int(text[end]) + 1) % 10) + text[end + 1 :]


@pytest.mark.slow
def test_a_prm_learns_step_labels():
    torch.set_num_threads(1)
    rng = random.Random(0)
    task = lk.tasks.get_task("scratchpad")
    data = [(e.prompt, corrupted(task.operands(e.prompt), rng)) for e in task.train[:2000]]
    held = [(e.prompt, corrupted(task.operands(e.prompt), rng)) for e in task.heldout[:300]]
    labels = [s.label for p, c in held for s in process_steps(c, p)[:-1]]
    base = max(sum(labels), len(labels) - sum(labels)) / len(labels)  # always the majority
    m, tok = lk.load_policy("tiny-think")  # the trunk: a policy that writes scratchpads
    prm, hist = train_verifier(m, tok, data, "prm", steps=30, batch_size=32, seed=0)
    q = verifier_quality(prm, held)
    assert hist[-1]["loss"] < hist[0]["loss"]
    assert q["thought accuracy"] > base + 0.05, (q, base)
