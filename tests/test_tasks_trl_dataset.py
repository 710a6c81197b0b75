"""TRL's prompt-only datasets as labkit tasks: every source TRL takes, standard and
conversational prompts (the tokenizer's chat template), the held-out split, clear errors."""

import json

import pytest
from datasets import Dataset, DatasetDict

from labkit.models.policy import char_tokenizer
from labkit.tasks.trl_dataset import TRLDataset

ROWS = [{"prompt": f"{a}+1=", "solution": str(a + 1), "level": a % 3} for a in range(10, 30)]
CHAT = [
    {"prompt": [{"role": "user", "content": r["prompt"]}], "solution": r["solution"]} for r in ROWS
]
TEMPLATE = "{% for m in messages %}[{{ m['role'] }}]{{ m['content'] }}{% endfor %}[assistant]"


def chat_tokenizer():
    tok = char_tokenizer()
    tok.chat_template = TEMPLATE
    return tok


@pytest.fixture
def jsonl(tmp_path):
    path = tmp_path / "train.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return path


@pytest.mark.parametrize("source", ["list", "dataset", "datasetdict", "file"])
def test_every_source_trl_takes_gives_the_same_examples(source, jsonl):
    data = {
        "list": ROWS,
        "dataset": Dataset.from_list(ROWS),
        "datasetdict": DatasetDict({"train": Dataset.from_list(ROWS)}),
        "file": jsonl,
    }[source]
    task = TRLDataset(data, heldout_fraction=0.25, seed=3)
    assert len(task.train) == 15 and len(task.heldout) == 5
    assert {e.prompt for e in task.train + task.heldout} == {r["prompt"] for r in ROWS}
    cols = task.columns(task.train[:2])
    assert set(cols) == {"prompts", "solution", "level"}  # TRL: every column but prompt
    assert cols["prompts"] == [e.prompt for e in task.train[:2]]
    assert task.format_completions(["11"]) == ["11"] and not task.verifies


def test_heldout_is_eval_dataset_then_the_test_split_then_a_seeded_fraction():
    assert len(TRLDataset(ROWS, ROWS[:3]).train) == 20  # eval_dataset: nothing held back
    assert len(TRLDataset(ROWS, ROWS[:3]).heldout) == 3
    split = DatasetDict({"train": Dataset.from_list(ROWS), "test": Dataset.from_list(ROWS[:4])})
    assert len(TRLDataset(split).heldout) == 4
    a, b = TRLDataset(ROWS, seed=1), TRLDataset(ROWS, seed=1)
    assert [e.prompt for e in a.heldout] == [e.prompt for e in b.heldout]  # seeded
    assert [e.prompt for e in a.heldout] != [e.prompt for e in TRLDataset(ROWS, seed=2).heldout]


def test_conversational_prompts_use_the_chat_template_and_completions_are_messages():
    task = TRLDataset(CHAT, CHAT[:2], chat_template_kwargs={"enable_thinking": False})
    tok = chat_tokenizer()
    task.use_tokenizer(tok)
    e = task.train[0]
    rendered = tok.apply_chat_template(e.source, tokenize=False, add_generation_prompt=True)
    assert e.prompt == rendered == f"[user]{e.source[0]['content']}[assistant]"
    assert task.columns([e])["prompts"] == [e.source]  # the rewards get the messages
    assert task.format_completions(["11"]) == [[{"role": "assistant", "content": "11"}]]
    with pytest.raises(ValueError, match="no chat template"):
        TRLDataset(CHAT).use_tokenizer(char_tokenizer())


@pytest.mark.parametrize(
    ("rows", "match"),
    [
        ([{"question": "1+1=", "answer": "2"}], r"no 'prompt' column \(columns: \['question'"),
        ([{"messages": [{"role": "user", "content": "hi"}]}], "language-modeling format"),
        ([], "empty"),
        ([ROWS[0], CHAT[0]], "mixes standard"),
    ],
)
def test_a_dataset_trl_would_not_take_is_refused_with_the_fix(rows, match):
    with pytest.raises(ValueError, match=match):
        TRLDataset(rows, heldout_fraction=0.0)
