"""DPO on rollout pairs: refusals, pair building, the loss is core's, it improves the policy."""

import pytest
import torch

from labkit.algos.dpo import DPOConfig, DPOTrainer, sequence_logprobs
from labkit.algos.pairs import rollout_pairs
from labkit.core import dpo_loss
from labkit.tasks.base import Example, Task

PAIRS = [
    {"prompt": "12+30=", "chosen": "42", "rejected": "43"},
    {"prompt": "05+05=", "chosen": "10", "rejected": "11"},
]


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"beta": 0.0}, "beta=0.0: DPO's beta must be > 0"),
        ({"loss_type": "hinge"}, "loss_type='hinge'"),
        ({"pair_mode": "best"}, "pair_mode='best'"),
        ({"num_generations": 1}, "num_generations=1"),
        ({"max_completion_length": 0}, "max_completion_length=0"),
    ],
)
def test_bad_dpo_config_is_refused(kw, message):
    with pytest.raises(ValueError, match=message):
        DPOConfig(**kw)


def test_rollout_pairs_prefer_what_the_verifier_accepts():
    tr = DPOTrainer(pair_prompts=64, num_generations=4, max_steps=1)
    assert tr.pairs
    for p in tr.pairs:
        answer = str(sum(int(x) for x in p["prompt"][:-1].split("+")))
        assert tr.task.verify(p["chosen"], answer) and not tr.task.verify(p["rejected"], answer)


def test_pairs_are_built_on_scratchpad_with_the_thinking_policy():
    """Scratchpad declares a whole completion's length (a thought, then the answer), not an
    answer's: pairs are sampled up to it, so a thought fits and the verifier can accept."""
    tr = DPOTrainer(
        "tiny-think", task="scratchpad", pair_prompts=16, num_generations=4, max_steps=1, seed=0
    )
    assert len(tr.pairs) >= 4
    answer = {e.prompt: e.answer for e in tr.task.train}
    for p in tr.pairs:
        assert tr.task.verify(p["chosen"], answer[p["prompt"]])
        assert not tr.task.verify(p["rejected"], answer[p["prompt"]])
    assert any("</think><answer>" in p["chosen"] for p in tr.pairs)
    short = rollout_pairs(tr.model, tr.tokenizer, tr.task, tr.task.train[:16], 8, "long2short")
    assert short and all(len(p["chosen"]) < len(p["rejected"]) for p in short)


class Unsized(Task):
    """A task that declares no length (neither max_answer_chars nor max_completion_chars)."""

    name = "unsized"

    def __init__(self):
        self.train = self.heldout = [Example("12+30=", "42")]

    def verify(self, completion: str, answer: str) -> bool:
        return completion.strip() == answer


def test_a_task_without_a_length_needs_max_completion_length(tiny):
    model, tok = tiny
    with pytest.raises(
        ValueError, match="task 'unsized' gives no completion length.*pass max_completion_length="
    ):
        rollout_pairs(model, tok, Unsized(), Unsized().train, 4)
    with pytest.raises(ValueError, match="pass max_completion_length="):
        DPOTrainer(model, tokenizer=tok, task=Unsized(), pair_prompts=2, num_generations=4)
    tr = DPOTrainer(
        model,
        tokenizer=tok,
        task=Unsized(),
        pair_prompts=64,
        num_generations=8,
        max_completion_length=3,
        seed=0,
    )
    assert tr.pairs and all(p["chosen"] == "42" for p in tr.pairs)


def test_first_step_is_core_dpo_loss_on_summed_logprobs(tiny):
    pair = PAIRS[0]
    tr = DPOTrainer(pairs=[pair], batch_size=2, max_steps=1, beta=0.2)
    model, tok = tiny
    lp = sequence_logprobs(model, tok, [pair["prompt"]] * 2, [pair["chosen"], pair["rejected"]])
    # the summed log-prob is the sum of the per-token log-probs of the answer and eos
    ids = tok(pair["prompt"] + pair["chosen"])["input_ids"] + [tok.eos_token_id]
    logits = model(input_ids=torch.tensor([ids])).logits[0, :-1]  # [L-1, V]
    tok_lp = logits.log_softmax(-1)[torch.arange(len(ids) - 1), torch.tensor(ids[1:])]
    assert lp[0].item() == pytest.approx(tok_lp[-3:].sum().item(), abs=1e-4)
    want, _ = dpo_loss(lp[:1], lp[1:], lp[:1], lp[1:], 0.2)
    m = tr.step()
    assert m["loss"] == pytest.approx(want.item(), abs=1e-6)  # pi = pi_ref at step 1: ln 2
    assert m["logps/chosen"] == pytest.approx(lp[0].item(), rel=1e-4)
    m = tr.step()
    assert m["rewards/margins"] > 0  # after one step the chosen answers gained on the rejected


def test_dpo_on_a_lora_policy_uses_the_disabled_adapter_as_reference(lora):
    lora, tok = lora
    tr = DPOTrainer(lora, tokenizer=tok, pairs=PAIRS, batch_size=2, max_steps=2, learning_rate=1e-2)
    assert tr.ref_model is None
    tr.train(progress=False)
    assert tr.log.metrics["rewards/margins"].iloc[-1] > 0


@pytest.mark.slow
def test_dpo_improves_heldout_accuracy_on_a_fixed_seed(heldout_gain):
    """Offline DPO on correct-vs-incorrect pairs of the initial policy (512 prompts x 8)."""
    tr = DPOTrainer(max_steps=40, pair_prompts=512, beta=0.3, learning_rate=3e-5, seed=0)
    before, after = heldout_gain(tr, 500)
    m = tr.log.metrics
    assert after >= before + 0.05, (before, after)
    assert m["rewards/accuracies"].tail(10).mean() > 0.6
    assert torch.isfinite(torch.tensor(m["loss"].values)).all()
