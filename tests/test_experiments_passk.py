"""pass@k vs maj@k before and after RL (labkit.experiments.passk): the vote against hand-computed
values, and the direction the runs showed (RL lifts pass@1 and maj@k far more than pass@K)."""

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


def fake(pass_b, pass_a, maj_b, maj_a, ks=(1, 16)):
    rows = [
        {"k": k, "pass@k": p, "maj@k": m, "model": name}
        for name, ps, ms in [("before", pass_b, maj_b), ("after", pass_a, maj_a)]
        for k, p, m in zip(ks, ps, ms)
    ]
    cov = {"prompts": 10, "solved before": 9, "solved after": 9, "only before": 0, "only after": 0}
    return {"curves": pd.DataFrame(rows), "coverage": cov, "config": {"n": 16}}


def test_verdict_reads_the_lifts():
    sharp = fake([0.4, 0.9], [0.8, 0.92], [0.4, 0.5], [0.8, 0.9])
    assert passk.lifts(sharp).loc[1, "pass@k lift"] == pytest.approx(0.4)
    assert "REPRODUCED" in passk.verdict(sharp).splitlines()[-1]
    wide = fake([0.4, 0.6], [0.5, 0.9], [0.4, 0.5], [0.5, 0.6])
    assert "NOT REPRODUCED" in passk.verdict(wide)
    assert "base model's pass@16 is higher" in passk.verdict(
        fake([0.4, 0.9], [0.8, 0.85], [0.4, 0.5], [0.8, 0.9])
    )


@pytest.mark.slow
def test_rl_lifts_pass1_and_majk_more_than_passk():
    torch.set_num_threads(1)
    res = passk.run(fast=True, seed=0, progress=False)  # 30 steps, 50 prompts x 16 samples
    t = passk.lifts(res)
    K = int(t.index.max())
    p1, pK, mK = t.loc[1, "pass@k lift"], t.loc[K, "pass@k lift"], t.loc[K, "maj@k lift"]
    assert p1 > 0.05 and mK > 0.05  # RL helped the sample and the vote
    assert p1 > 2 * max(pK, 0) and mK > 2 * max(pK, 0)  # ...far more than pass@K
    gap = {w: t.loc[K, f"pass@k {w}"] - t.loc[1, f"pass@k {w}"] for w in ("before", "after")}
    assert gap["after"] < gap["before"]  # the pass@K - pass@1 gap shrinks
    assert t.loc[K, "maj@k after"] > t.loc[1, "pass@k after"]  # voting still adds after RL
    assert passk.verdict(res).splitlines()[4].startswith("REPRODUCED")
