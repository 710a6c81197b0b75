"""The tiny policy, its tokenizer, the addition task and loading from folders."""

import pytest
import torch

import labkit as lk
from labkit.models.policy import char_tokenizer, load_policy, tiny_policy
from labkit.models.rollout import Rollout, completion_logprobs, rollout
from labkit.tasks import get_task


def test_tokenizer_round_trips_every_printable_char():
    tok = char_tokenizer()
    text = "".join(chr(c) for c in range(32, 127))
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert len(ids) == 95 and tok.decode(ids) == text
    assert tok.unk_token_id not in ids


def test_addition_split_is_disjoint_and_verifier_is_exact():
    task = get_task("addition")
    train = {e.prompt for e in task.train}
    assert not train & {e.prompt for e in task.heldout}
    assert len(task.heldout) == 2000
    e = task.heldout[0]
    a, b = map(int, e.prompt[:-1].split("+"))
    assert int(e.answer) == a + b
    assert task.verify(str(a + b), e.answer) and not task.verify(str(a + b + 1), e.answer)
    assert not task.verify("", e.answer) and not task.verify("1 2", e.answer)


def test_unknown_task_and_model_names_are_refused_with_the_choices():
    with pytest.raises(ValueError, match="unknown task 'subtraction'.*addition"):
        get_task("subtraction")
    with pytest.raises(ValueError, match="unknown policy 'no-such-model'.*tiny"):
        load_policy("no-such-model")


def test_shipped_checkpoint_loads_and_a_local_folder_round_trips(tmp_path):
    model, tok = lk.load_policy("tiny")
    assert 0.8e6 < sum(p.numel() for p in model.parameters()) < 1.0e6
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    again, tok2 = lk.load_policy(str(tmp_path))  # the same code path a hub id takes
    x = tok(["12+34="], return_tensors="pt")["input_ids"]
    assert torch.equal(model(x).logits, again(x).logits)
    assert tok2.decode(x[0]) == "12+34="


def test_left_padding_does_not_change_log_probs():
    """A prompt alone and the same prompt left-padded beside a longer one score the same."""
    model, tok = tiny_policy(seed=1)
    model.eval()
    g = torch.Generator().manual_seed(0)
    both = rollout(model, tok, ["1+2=", "10+20="], 5, temperature=1.0, generator=g)
    alone = Rollout(
        both.prompt_ids[:1, 2:],
        both.prompt_mask[:1, 2:],
        both.completion_ids[:1],
        both.completion_mask[:1],
        both.truncated[:1],
        both.prompts[:1],
        both.completions[:1],
    )
    with torch.no_grad():
        lp_both, lp_alone = completion_logprobs(model, both), completion_logprobs(model, alone)
    m = both.completion_mask[0].bool()
    torch.testing.assert_close(lp_both[0][m], lp_alone[0][m], atol=1e-5, rtol=1e-5)


def test_greedy_sampling_matches_full_forward_argmax(tiny):
    """The KV-cache sampler and a plain forward pass agree on every greedy token."""
    model, tok = tiny
    b = rollout(model, tok, ["07+35=", "5+5=", "99+99="], 4, temperature=0)
    with torch.no_grad():
        _, logits = completion_logprobs(model, b, return_logits=True)
    m = b.completion_mask.bool()
    assert torch.equal(logits.argmax(-1)[m], b.completion_ids[m])
    # a row stops at eos: the mask covers eos and nothing after it
    for row, mask in zip(b.completion_ids, b.completion_mask):
        n = int(mask.sum())
        assert row[n - 1] == tok.eos_token_id or n == 4


def test_top_k_1_is_greedy(tiny):
    model, tok = tiny
    prompts = [e.prompt for e in get_task("addition").heldout[:32]]
    greedy = rollout(model, tok, prompts, 4, temperature=0)
    topk1 = rollout(
        model, tok, prompts, 4, temperature=1.0, top_k=1, generator=torch.Generator().manual_seed(3)
    )
    assert greedy.completions == topk1.completions
