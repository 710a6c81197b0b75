"""Test-time search (labkit.experiments.search): best-of-N and the step cut against hand
values, the verdict's reading of a table, and the direction the runs showed (best-of-N with a
verifier-trained ranker beats a single sample)."""

import pandas as pd
import pytest
import torch

from labkit.experiments import search

RIGHT = "<think>3+5=8 8+8=16</think><answer>16</answer>"


def test_best_of_n_against_hand_counts():
    s = torch.tensor([[0.9, 0.1, 0.5], [0.2, 0.2, 0.2]])
    ok = torch.tensor([[False, True, True], [True, False, False]])
    g = torch.Generator().manual_seed(0)
    acc = search.best_of_n(s, ok, 3, subsets=4000, generator=g)
    assert acc[0] == 0.0  # the top score is the wrong one
    assert acc[1] == pytest.approx(1 / 3, abs=0.03)  # all tied: a random pick
    # N = 1 is one random sample: the share of right samples, whatever the scores
    one = search.best_of_n(s, ok, 1, subsets=4000, generator=g)
    assert one.tolist() == pytest.approx([2 / 3, 1 / 3], abs=0.03)
    assert search.pass_at(ok, 1).tolist() == pytest.approx([2 / 3, 1 / 3])
    assert search.pass_at(ok, 3).tolist() == [1.0, 1.0]


def test_next_step_cuts_after_one_step():
    assert search._next_step("", RIGHT, "3+5+8=") == ("<think>3+5=8", False)
    assert search._next_step("<think>3+5=8", RIGHT[12:], "3+5+8=") == ("<think>3+5=8 8+8=16", False)
    assert search._next_step("<think>3+5=8 8+8=16", RIGHT[19:], "3+5+8=") == (RIGHT, True)
    assert search._next_step("", "<answer>16</answer>", "3+5+8=") == ("<answer>16</answer>", True)
    # a continuation cut before its thought closes: the step before the cut, not the stub
    assert search._next_step("<think>3+5=8", " 8+8=16 16+2=1", "3+5+8+2=") == (
        "<think>3+5=8 8+8=16",
        False,
    )
    assert search.answer_of(RIGHT) == 16 and search.answer_of("16") == -1


def fake(one, prm, orm, vote, oracle):
    rows = [
        {"method": m, "N": N, "accuracy": a}
        for m, accs in [
            ("pass@N (oracle)", (one, oracle)),
            ("majority vote", (one, vote)),
            ("best-of-N, ORM", (one, orm)),
            ("best-of-N, PRM min", (one, prm)),
            ("best-of-N, PRM prod", (one, prm)),
        ]
        for N, a in zip((1, 8), accs)
    ]
    return {"curves": pd.DataFrame(rows), "beam": [], "config": {"expand": 4}}


def test_verdict_reads_the_table():
    v = search.verdict(fake(0.4, 0.7, 0.6, 0.5, 0.9)).splitlines()
    assert v[-2].startswith("REPRODUCED") and v[-1].startswith("REPRODUCED")
    v = search.verdict(fake(0.4, 0.41, 0.405, 0.5, 0.9)).splitlines()
    assert v[-2].startswith("NOT REPRODUCED") and v[-1].startswith("NOT REPRODUCED")


@pytest.mark.slow
def test_best_of_n_with_a_trained_verifier_beats_one_sample():
    torch.set_num_threads(1)
    res = search.run(fast=True, seed=0)  # verifiers on 64 x 2 samples; 24 prompts x 8
    df = res["curves"].set_index(["method", "N"])["accuracy"]
    one = df[("pass@N (oracle)", 1)]
    for ranker in ("best-of-N, ORM", "best-of-N, PRM min", "best-of-N, PRM prod"):
        assert df[(ranker, 8)] > one + 0.05, (ranker, df[(ranker, 8)], one)
    assert df[("pass@N (oracle)", 8)] >= max(df[(m, 8)] for m in df.index.levels[0])
    assert search.verdict(res).splitlines()[-2].startswith("REPRODUCED")
