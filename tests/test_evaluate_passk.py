"""pass@k (unbiased, Chen et al.) and maj@k on held-out prompts."""

from math import comb

import pytest

import labkit as lk
from labkit.runs.evaluate import pass_and_majority, pass_at_k


@pytest.mark.parametrize("n, c, k", [(10, 3, 1), (10, 3, 5), (16, 1, 8), (8, 8, 2), (5, 0, 5)])
def test_pass_at_k_is_the_combinatorial_definition(n, c, k):
    assert pass_at_k(n, c, k) == pytest.approx(1 - comb(n - c, k) / comb(n, k))


def test_pass_and_majority_on_the_tiny_policy(tiny):
    model, tok = tiny
    task = lk.get_task("addition")
    probe = task.heldout[:100]
    r = pass_and_majority(model, tok, task, probe, n=8, ks=(1, 4, 8), seed=3)
    assert 0 < r["pass@1"] < r["pass@4"] < r["pass@8"] <= 1
    # pass@1 is the mean per-sample accuracy of the same 800 samples; greedy-ish voting helps
    assert r["pass@1"] == pytest.approx(lk.accuracy(model, tok, task, probe, samples=8, seed=3))
    assert r["maj@8"] >= r["pass@1"] - 0.05
    assert pass_and_majority(model, tok, task, probe, n=4, ks=(1,), temperature=0)[
        "pass@1"
    ] == pytest.approx(lk.accuracy(model, tok, task, probe, temperature=0))
