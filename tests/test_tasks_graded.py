"""The graded task: targets verify, steps and re-checks are labelled, difficulty is kept per
example, a correct thought grows with difficulty, and the shipped cold start's card shows the
spread between easy and hard cells that it measured."""

import importlib.util
import json
import pathlib
import random
from collections import Counter, defaultdict

import pytest
import torch

from labkit.algos.sft import SFTTrainer
from labkit.models.policy import BUILTIN, char_tokenizer, load_policy
from labkit.rewards.reasoning import kimi_length
from labkit.tasks import get_task
from labkit.tasks.graded import (
    CELLS,
    MAX_RECHECKS,
    Graded,
    bucket,
    bucket_report,
    carries,
    graded_steps,
    graded_target,
)

CARD = BUILTIN["tiny-graded"] / "labkit_card.json"
SCRIPT = pathlib.Path(__file__).parent.parent / "scripts" / "make_graded_checkpoint.py"


@pytest.fixture(scope="module")
def task():
    return get_task("graded")


def test_every_target_verifies_fits_and_labels_its_rechecks(task):
    rng = random.Random(0)
    for e in task.train[:400] + task.heldout:
        ops, d = task.operands(e.prompt), e.columns["digits"]
        n_steps = (len(ops) - 1) * d
        n = rng.randint(0, min(MAX_RECHECKS, n_steps))
        rechecks = rng.sample(range(n_steps), n)
        for think in (True, False):
            c = graded_target(ops, d, think, rechecks)
            assert task.verify(c, e.answer) and len(c) <= task.max_completion_chars
            s = graded_steps(c, ops, d)
            assert all(x.correct for x in s) and len(s) == think * (n_steps + n)
            assert sum(x.redundant for x in s) == think * n


def test_wrong_redundant_and_extra_steps_are_labelled():
    ops = [12, 34, 56]
    assert graded_target(ops, 2) == (
        "<think>12+30=42 42+4=46 46+50=96 96+6=102</think><answer>102</answer>"
    )
    c = (
        "<think>12+30=42 12+30=42 42+4=47 42+4=46 46+50=96 96+6=102 9+9=18</think>"
        "<answer>102</answer>"
    )
    got = [(s.text, s.correct, s.redundant) for s in graded_steps(c, ops, 2)]
    assert got == [
        ("12+30=42", True, False),
        ("12+30=42", True, True),
        ("42+4=47", False, False),
        ("42+4=46", True, False),
        ("46+50=96", True, False),
        ("96+6=102", True, False),
        ("9+9=18", False, False),
    ]
    assert c[graded_steps(c, ops, 2)[2].start :].startswith("42+4=47")
    letters = "<think>bc+da=ec ec+e=eg eg+fa=jg jg+g=bac</think><answer>102</answer>"  # read too
    assert [s.correct for s in graded_steps(letters, ops, 2)] == [True] * 4
    assert graded_steps("<answer>102</answer>", ops, 2) == []


def test_verify_on_hand_written_completions(task):
    good = ["<answer>102</answer>", "<think>anything</think><answer> 102 </answer>"]
    bad = ["102", "<answer>103</answer>", "<think>12+34=46<answer>102</answer>", ""]
    assert [task.verify(c, "102") for c in good + bad] == [True] * 2 + [False] * 4


def test_difficulty_is_kept_per_example_and_the_cells_share_the_pool(task):
    for e in task.train[:500] + task.heldout:
        ops = task.operands(e.prompt)
        k, d = len(ops), len(e.prompt.split("+")[0])
        assert e.columns == {
            "bucket": bucket(k, d),
            "n_operands": k,
            "digits": d,
            "carries": carries(ops),
        }
        assert int(e.answer) == sum(ops)
    assert carries([5, 5]) == 1 and carries([95, 5, 1]) == 2 and carries([12, 34]) == 0
    train = Counter(e.columns["bucket"] for e in task.train)
    assert set(train.values()) == {len(task.train) // len(CELLS)}
    held = Counter(e.columns["bucket"] for e in task.heldout)
    assert held == {bucket(k, d): 20 if (k, d) == (2, 1) else 128 for k, d in CELLS}
    assert not {e.prompt for e in task.train} & {e.prompt for e in task.heldout}
    assert len({e.prompt for e in task.heldout}) == len(task.heldout)
    assert task.columns(task.heldout[:2])["bucket"] == [
        e.columns["bucket"] for e in task.heldout[:2]
    ]


def test_spec_rebuilds_the_task_and_bad_cells_are_named():
    t = Graded(cells=[(2, 1), (5, 2)], n_train=200, seed=3)
    again = get_task("graded", **json.loads(json.dumps(t.spec())))
    assert [e.prompt for e in again.train] == [e.prompt for e in t.train]
    assert Graded().spec() == {}
    with pytest.raises(ValueError, match="cells"):
        Graded(cells=[(9, 1)])


def test_a_correct_thought_grows_with_difficulty(task):
    every = Graded(cells=[(k, d) for d in (1, 2) for k in range(2, 9)], n_train=140)
    length = defaultdict(list)
    for e in every.heldout:
        ops = task.operands(e.prompt)
        length[e.columns["n_operands"], e.columns["digits"]].append(
            len(graded_target(ops, e.columns["digits"]))
        )
    mean = {cell: sum(v) / len(v) for cell, v in length.items()}
    for d in (1, 2):
        grow = [mean[k, d] for k in range(2, 9)]
        assert grow == sorted(set(grow))  # strictly growing
    assert all(mean[k, 2] > mean[k, 1] for k in range(2, 9))
    # the longest correct completion: 99+99+99 with its two longest steps re-checked
    longest = graded_target([99] * 3, 2, rechecks=[0, 2])
    assert "198+90=288 198+90=288" in longest
    assert task.max_completion_chars == len(longest) > len(graded_target([9] * 5, rechecks=[2, 3]))


def test_a_length_reward_prefers_the_thought_without_its_rechecks():
    ops, prompt = [12, 34, 56], "12+34+56="
    padded, plain = graded_target(ops, 2, rechecks=[0, 1]), graded_target(ops, 2)
    assert kimi_length([padded, plain], answer=["102"] * 2, prompts=[prompt] * 2) == [-0.5, 0.5]


def test_bucket_report_on_hand_made_completions():
    easy, hard = Graded.example([3, 5], 1), Graded.example([12, 34, 56], 2)
    ex = [easy] * 4 + [hard] * 2
    texts = [
        "<answer>8</answer>",
        "<answer>8</answer>",
        "<think>3+5=8</think><answer>8</answer>",
        "<think>3+5=8 3+5=8 x</think><answer>9</answer>",
        "<think>12+30=42 42+4=46 46+50=96 96+6=102</think><answer>102</answer>",
        "<answer>100</answer>",
    ]
    r = bucket_report(ex, texts)
    assert list(r) == ["2x1", "3x2"]
    assert r["2x1"] == {
        "n": 4,
        "pass_rate": 0.75,
        "think_rate": 0.5,
        "thought_len": (len("3+5=8") + len("3+5=8 3+5=8 x")) / 2,
        "recheck_rate": 0.5,
        "prompts": 1,
        "all_pass": 0.0,
        "none_pass": 0.0,
        "some_pass": 1.0,
    }
    assert r["3x2"]["pass_rate"] == 0.5 and r["3x2"]["thought_len"] == len(
        "12+30=42 42+4=46 46+50=96 96+6=102"
    )
    assert r["3x2"]["recheck_rate"] == 0.0
    assert bucket_report([easy], ["<answer>8</answer>"])["2x1"]["thought_len"] is None


def test_every_character_is_in_the_tokenizer(task):
    vocab = char_tokenizer().get_vocab()
    chars = {c for e in task.train[:2000] for c in e.prompt + e.answer}
    for e in task.heldout:
        ops = task.operands(e.prompt)
        chars |= set(graded_target(ops, e.columns["digits"], rechecks=[0]))
    assert chars <= set(vocab), chars - set(vocab)


def test_the_cold_start_card_shows_the_spread_it_measured():
    card = json.loads(CARD.read_text())
    cells = card["cells"]
    easy, hard = bucket(*CELLS[0]), bucket(*CELLS[-1])
    assert list(cells) == [bucket(k, d) for k, d in CELLS]
    assert cells[easy]["accuracy_forced_direct"] > cells[hard]["accuracy_forced_direct"]
    assert cells[hard]["accuracy_forced_think"] > cells[hard]["accuracy_forced_direct"]
    assert (BUILTIN["tiny-graded"] / "model.safetensors").exists()


def test_the_cold_starts_sorted_chunks_give_the_whole_batchs_loss_and_gradient():
    spec = importlib.util.spec_from_file_location("make_graded", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    pairs = script.cold_start_pairs(Graded(n_train=60), think=0.5, recheck=0.5, seed=0)
    losses, grads = [], []
    for make, kw in [(SFTTrainer, {}), (script.SortedChunksSFT, {"chunks": 4})]:
        model, tok = load_policy("tiny-random")
        trainer = make(model, pairs, tokenizer=tok, max_steps=1, batch_size=16, **kw)

        def backward_only(loss, model=model):  # the gradient the optimizer would step on
            loss.backward()
            grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
            return 0.0

        trainer.optimizer_step = backward_only
        losses.append(trainer.train_step().metrics["loss"])
    assert losses[0] == pytest.approx(losses[1], rel=1e-5)
    assert torch.allclose(grads[0], grads[1], rtol=1e-4, atol=1e-7)


def _script():
    spec = importlib.util.spec_from_file_location("make_graded", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def _pooled(cells: dict, rate: str) -> float:
    """``rate`` over the cells' completions (think_rate) or thoughts (recheck_rate)."""
    w = {b: c["n"] * (c["think_rate"] if rate == "recheck_rate" else 1) for b, c in cells.items()}
    have = [b for b in cells if cells[b][rate] is not None]
    return sum(cells[b][rate] * w[b] for b in have) / sum(w[b] for b in have)


def test_the_recheck_cold_start_loads_and_its_card_matches_its_own_probe():
    """``tiny-graded-recheck`` (lab 92's second set-up; the script's docstring): tiny-graded
    continued with 0.85 of its thoughts re-checked. Its card shows re-checks in most thoughts on
    the one-digit cells and pass rates within 0.15 of tiny-graded's on every cell; a small fixed
    probe of the checkpoint (the first 8 held-out prompts of each cell x 4 samples, the card's
    seed) agrees with the card's pooled think and re-check rates within sampling error."""
    card = json.loads((BUILTIN["tiny-graded-recheck"] / "labkit_card.json").read_text())
    cells, graded = card["cells"], json.loads(CARD.read_text())["cells"]
    assert card["base"] == "tiny-graded" and card["targets"]["recheck"] == 0.85
    assert list(cells) == [bucket(k, d) for k, d in CELLS]
    assert all(cells[bucket(k, 1)]["recheck_rate"] > 0.5 for k in (2, 3, 4, 5))
    assert all(abs(cells[b]["accuracy_free"] - graded[b]["accuracy_free"]) < 0.15 for b in cells)
    model, tok = load_policy("tiny-graded-recheck")
    probe = _script().probe(model, tok, Graded(), per_cell=8, G=4, seed=card["seed"] + 1)
    assert list(probe) == list(cells)
    assert abs(_pooled(probe, "think_rate") - _pooled(cells, "think_rate")) < 0.1
    assert abs(_pooled(probe, "recheck_rate") - _pooled(cells, "recheck_rate")) < 0.15


def test_the_cards_recheck_report_on_hand_made_thoughts():
    """Re-checks per thought, and accuracy with and without one; direct answers take no part."""
    ex = [Graded.example([12, 34], 2)] * 3 + [Graded.example([3, 5], 1)]
    c = [
        "<think>12+30=42 12+30=42 42+4=46</think><answer>46</answer>",
        "<think>12+30=42 42+4=46 42+4=46</think><answer>47</answer>",
        "<think>12+30=42 42+4=46</think><answer>46</answer>",
        "<answer>8</answer>",
    ]
    r = _script().recheck_report(ex, c)
    assert list(r) == ["2x2"]
    assert r["2x2"] == pytest.approx(
        {"rechecks_per_thought": 2 / 3, "accuracy_rechecked": 0.5, "accuracy_plain": 1.0}
    )
