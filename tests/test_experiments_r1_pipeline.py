"""The R1 pipeline (labkit.experiments.r1_pipeline): the student, the verdict, and the
direction the fixed-seed runs showed."""

import pandas as pd
import pytest
import torch

from labkit.experiments import r1_pipeline as r1
from labkit.models.policy import load_policy


def test_student_is_smaller_and_runs():
    student, tok = r1.student_policy()
    n = sum(p.numel() for p in student.parameters())
    assert n < sum(p.numel() for p in load_policy("tiny")[0].parameters()) / 4
    ids = tok(["1+2="], return_tensors="pt")["input_ids"]
    assert student(ids).logits.shape == (1, 4, len(tok))  # [B, T, V]


def test_verdict_reads_the_table():
    idx = [
        "1 cold start (SFT)",
        "2 reasoning RL",
        "3-4 rejection sampling + SFT",
        "5 second RL",
        "student: base (direct answers)",
        "student: distilled (SFT)",
        "student: RL",
    ]
    t = pd.DataFrame({"held-out accuracy": [0.30, 0.40, 0.42, 0.43, 0.1, 0.3, 0.1]}, index=idx)
    v = r1.verdict({"table": t, "config": {"heldout": 400}}).splitlines()
    assert v[0].startswith("REPRODUCED: 2 reasoning RL beats 1 cold start")
    assert v[1].startswith("NOT REPRODUCED: 5 second RL beats 3-4")  # +0.01
    assert v[2].startswith("REPRODUCED: 3-4 rejection sampling + SFT beats 1 cold start")
    assert v[3].startswith("REPRODUCED: student: distilled (SFT) beats student: RL")


@pytest.mark.slow
def test_fast_pipeline_runs_every_stage(runs):
    torch.set_num_threads(1)
    res = r1.run(fast=True, seed=0)
    t, rs = res["table"], res["rejection"]
    assert list(t.index)[:4] == [
        "1 cold start (SFT)",
        "2 reasoning RL",
        "3-4 rejection sampling + SFT",
        "5 second RL",
    ]
    # measured (seed 0, fast budget, 64 held-out prompts at T=1): think rate 0.406 (cold)
    # -> 0.703 (RL, 3 steps) -> 0.984 (SFT on 94 kept traces) -> 0.969 (RL again)
    assert t.loc["2 reasoning RL", "think rate"] > t.loc["1 cold start (SFT)", "think rate"]
    assert t.loc["3-4 rejection sampling + SFT", "think rate"] > 0.9
    assert 0 < rs["kept"] <= rs["accuracy"] * rs["drawn"]  # kept: correct AND thinking
