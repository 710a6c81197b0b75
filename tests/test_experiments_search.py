"""Test-time search (labkit.experiments.search, search_rank, search_beam): best-of-N and the
step cut against hand values, accuracy at a token budget, and a summary holding every column a
claim is judged on. The runs themselves: the lab's live cell in fast mode
(tests/test_notebooks.py) and the stored result (tests/test_results_tables.py)."""

import pandas as pd
import pytest
import torch

from labkit.experiments import search, search_beam, search_rank

RIGHT = "<think>3+5=8 8+8=16</think><answer>16</answer>"


def test_best_of_n_against_hand_counts():
    s = torch.tensor([[0.9, 0.1, 0.5], [0.2, 0.2, 0.2]])
    ok = torch.tensor([[False, True, True], [True, False, False]])
    g = torch.Generator().manual_seed(0)
    acc = search_rank.best_of_n(s, ok, 3, subsets=4000, generator=g)
    assert acc[0] == 0.0  # the top score is the wrong one
    assert acc[1] == pytest.approx(1 / 3, abs=0.03)  # all tied: a random pick
    # N = 1 is one random sample: the share of right samples, whatever the scores
    one = search_rank.best_of_n(s, ok, 1, subsets=4000, generator=g)
    assert one.tolist() == pytest.approx([2 / 3, 1 / 3], abs=0.03)
    assert search_rank.pass_at(ok, 1).tolist() == pytest.approx([2 / 3, 1 / 3])
    assert search_rank.pass_at(ok, 3).tolist() == [1.0, 1.0]


def test_next_step_cuts_after_one_step():
    cut = search_beam.next_step
    assert cut("", RIGHT, "3+5+8=") == ("<think>3+5=8", False)
    assert cut("<think>3+5=8", RIGHT[12:], "3+5+8=") == ("<think>3+5=8 8+8=16", False)
    assert cut("<think>3+5=8 8+8=16", RIGHT[19:], "3+5+8=") == (RIGHT, True)
    assert cut("", "<answer>16</answer>", "3+5+8=") == ("<answer>16</answer>", True)
    # a continuation cut before its thought closes: the step before the cut, not the stub
    assert cut("<think>3+5=8", " 8+8=16 16+2=1", "3+5+8+2=") == ("<think>3+5=8 8+8=16", False)
    assert search_rank.answer_of(RIGHT) == 16 and search_rank.answer_of("16") == -1


def test_accuracy_at_a_budget_is_read_off_the_curve_in_log_tokens():
    tokens, acc = [40.0, 80.0, 160.0], [0.5, 0.7, 0.8]
    assert search_rank.at_budget(tokens, acc, 80.0) == pytest.approx(0.7)
    assert search_rank.at_budget(tokens, acc, 80.0 * 2**0.5) == pytest.approx(0.75)
    assert search_rank.at_budget(tokens, acc, 10.0) == 0.5  # held at the ends
    assert search_rank.at_budget(tokens, acc, 1000.0) == 0.8


def test_summary_holds_every_claimed_column():
    methods = {search_rank.ORACLE: (0.4, 0.9), search_rank.VOTE: (0.4, 0.6)}
    methods |= {
        f"best-of-N, {k}": (0.4, a) for k, a in (("ORM", 0.5), ("PRM min", 0.8), ("PRM prod", 0.7))
    }
    df = pd.DataFrame(
        [
            {"method": m, "N": N, "accuracy": a, "tokens/prompt": 40.0 * N}
            for m, accs in methods.items()
            for N, a in zip((1, 4), accs)
        ]
    )
    quality = {k: {"answer accuracy": 0.8, "thought accuracy": 0.9} for k in ("prm", "orm")}
    s = search.summary(df, {1: (0.75, 80.0)}, quality)
    assert s["PRM prod - ORM"] == pytest.approx(0.2) and s["PRM prod - pass@1"] == pytest.approx(
        0.3
    )
    # best-of-N by the PRM's min at 80 tokens: halfway (in log tokens) from 0.4 at 40 to 0.8 at 160
    assert s["beam width 1 - best-of-N, same tokens"] == pytest.approx(0.75 - 0.6)
    for c in search.EXPERIMENT.claims:
        assert c.arm in search.ARMS and c.baseline is None, c.key
        assert c.metric in s, c.key
