"""Hub tasks without the hub: GSM8K's schema in a local file, through ``datasets`` and
``math-verify``, end to end in a GRPO step."""

from __future__ import annotations

import json

import pytest
import torch

import labkit as lk
from labkit.tasks.hub import gsm8k_answer

ROWS = [  # GSM8K's schema: question, answer with the worked solution and "#### <number>"
    {
        "question": "Tom has 3 apples and buys 4 more. How many apples does he have?",
        "answer": "He has 3 + 4 = <<3+4=7>>7 apples.\n#### 7",
    },
    {
        "question": "A box holds 12 pens. How many pens are in 100 boxes?",
        "answer": "12 * 100 = <<12*100=1200>>1200 pens.\n#### 1,200",
    },
    {"question": "Half of 9 is?", "answer": "9 / 2 = 4.5\n#### 4.5"},
] * 4


@pytest.fixture
def gsm8k_file(tmp_path):
    path = tmp_path / "gsm8k_train.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in ROWS))
    return path


def test_gsm8k_from_a_local_file_checks_answers_with_math_verify(gsm8k_file):
    task = lk.get_task("gsm8k", path=gsm8k_file, heldout_fraction=0.25)
    assert task.name == "gsm8k" and len(task.train) == 9 and len(task.heldout) == 3
    assert "\\boxed{}" in task.train[0].prompt
    assert {e.answer for e in task.train + task.heldout} == {"7", "1200", "4.5"}
    assert task.verify("so the answer is \\boxed{1200}", "1200")
    assert task.verify("The total is $1200$.", "1200")
    assert task.verify("\\boxed{\\frac{9}{2}}", "4.5")  # mathematically equal
    assert not task.verify("\\boxed{1201}", "1200") and not task.verify("no idea", "7")
    assert task.accuracy_reward(["\\boxed{7}", "8"], answer=["7", "7"]) == [1.0, 0.0]


def test_from_dataset_takes_any_columns_and_refuses_missing_ones(tmp_path):
    rows = [{"q": f"{a}+{a}=", "a": str(2 * a)} for a in range(20)]
    task = lk.tasks.from_dataset(rows, prompt="q", answer="a", name="double")
    assert len(task.train) + len(task.heldout) == 20 and task.verify("12", "12")
    with pytest.raises(ValueError, match="column 'question'"):
        lk.tasks.from_dataset(rows)
    assert gsm8k_answer("x\n#### 1,234,567") == "1234567"


def test_a_grpo_step_trains_on_the_local_gsm8k(gsm8k_file):
    torch.set_num_threads(1)
    task = lk.tasks.gsm8k(gsm8k_file)
    tr = lk.GRPOTrainer(
        "tiny",
        task=task,
        reward_funcs=[task.accuracy_reward],
        prompts_per_step=2,
        num_generations=4,
        max_completion_length=8,
        max_steps=1,
        save_steps=0,
    )
    m = tr.step()
    assert m["step"] == 1 and "rewards/accuracy_reward/mean" in m
    s = tr.log.samples
    assert len(s) == 8 and set(s["answer"]) <= {"7", "1200", "4.5"}
