"""pass@k vs maj@k before and after RL (labkit.experiments.passk): the vote against hand-computed
values, the summary's columns, and each claim naming a real arm and summary column. The runs
themselves: the lab's live cell in fast mode (tests/test_notebooks.py) and the stored result."""

import pandas as pd
import pytest
import torch

from labkit.algos.config import BASE_RUN
from labkit.experiments import passk


def maj(values, target, k, subsets=20000):
    v, t = torch.tensor(values), torch.tensor(target)
    return majority_at(v, t, k, subsets)


def majority_at(v, t, k, subsets):
    return passk.majority_at_k(v, t, k, subsets, torch.Generator().manual_seed(0))


def test_the_experiment_trains_the_labs_base_run():
    assert passk.BASE == BASE_RUN


def test_majority_at_k_against_hand_counts():
    # samples 5, 5, 7 with answer 5: k=1 picks a 5 with prob 2/3; k=2 draws {5,5} (win) or
    # {5,7} twice (a tie, won half the time): (1 + 1/2 + 1/2) / 3 = 2/3; k=3: 5 wins outright
    assert maj([[5, 5, 7]], [5], 1) == pytest.approx(2 / 3, abs=0.02)
    assert maj([[5, 5, 7]], [5], 2) == pytest.approx(2 / 3, abs=0.02)
    assert maj([[5, 5, 7]], [5], 3) == pytest.approx(1.0)
    assert maj([[5, 7]], [5], 2) == pytest.approx(0.5, abs=0.02)  # a fair tie-break
    assert maj([[-1, -1, 5]], [5], 3) == pytest.approx(1.0)  # unparseable answers do not vote
    assert maj([[-1, -1, -1]], [5], 3) == pytest.approx(0.0)  # no vote at all: wrong
    assert maj([[7, 7, 5, 5, 5], [7, 7, 7, 5, 1]], [5, 5], 5).tolist() == [1.0, 0.0]


def test_maj_at_1_and_2_equal_pass_at_1():
    # with every answer valid, maj@1 = c / n, and maj@2 = maj@1 (two disagreeing samples are a
    # tie, broken at random), so both equal pass@1 in expectation
    g = torch.Generator().manual_seed(1)
    v = torch.randint(0, 4, (200, 8), generator=g)  # [P, n]
    t = torch.zeros(200, dtype=torch.long)  # [P]
    p1 = (v == 0).float().mean()
    assert float(majority_at(v, t, 1, 400).mean()) == pytest.approx(float(p1), abs=0.01)
    assert float(majority_at(v, t, 2, 400).mean()) == pytest.approx(float(p1), abs=0.01)


def fake_summary():
    return {f"pass@{k}": 0.5 for k in passk.KS} | {f"maj@{k}": 0.4 for k in passk.KS}


def test_summary_has_every_k_and_the_gaps(monkeypatch):
    v = torch.tensor([[5, 5, 7, -1], [3, 4, 4, 4], [9, 9, 9, 9]])  # [P, n]: answers 5, 4, 1
    target = torch.tensor([5, 4, 1])
    texts = [[str(int(x)) for x in row] for row in v]
    monkeypatch.setattr(passk, "KS", (1, 2, 4))
    monkeypatch.setattr(passk, "sample_answers", lambda *a, **k: (texts, v, target))
    task = passk.get_task("addition")
    examples = [type("E", (), {"answer": str(int(t))})() for t in target]
    s = passk.summary(None, None, task, examples, seed=0)
    assert s["pass@1"] == pytest.approx((2 / 4 + 3 / 4 + 0) / 3)
    assert s["pass@4"] == pytest.approx(2 / 3)
    assert s["unsolved"] == pytest.approx(1 / 3)
    assert s["pass@4 - pass@1"] == pytest.approx(s["pass@4"] - s["pass@1"])
    assert s["pass@4 - maj@4"] == pytest.approx(s["pass@4"] - s["maj@4"])


def test_k_table_is_the_summaries_in_long_form():
    rows = [{"arm": a, "seed": 0, **fake_summary()} for a in passk.ARMS]
    t = passk.k_table(pd.DataFrame(rows))
    assert len(t) == len(passk.ARMS) * len(passk.KS)
    assert set(t.columns) == {"arm", "seed", "k", "pass@k", "maj@k"}


def test_every_claim_names_a_real_arm_and_summary_column():
    K = passk.KS[-1]
    columns = set(fake_summary()) | {f"pass@{K} - pass@1", f"pass@{K} - maj@{K}", "unsolved"}
    for c in passk.EXPERIMENT.claims:
        assert c.arm in passk.ARMS and c.baseline in passk.ARMS, c.key
        assert c.metric in columns, c.key
    assert set(passk.EXPERIMENT.live["arms"]) <= set(passk.ARMS)
    assert len(passk.EXPERIMENT.seeds) >= 5 and passk.N >= K
