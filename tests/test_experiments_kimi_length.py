"""Kimi's length penalty and long2short (labkit.experiments.kimi_length): the plain penalty,
the verdict on a hand-made table, and (slow) the direction a fixed-seed run showed."""

import pandas as pd
import pytest
import torch

from labkit.experiments import kimi_length
from labkit.experiments.r1_zero import heldout
from labkit.experiments.r1_zero import single_run as train


def test_plain_length_and_verdict():
    assert kimi_length.plain_length(["x" * 18]) == [-0.25]
    t = pd.DataFrame(
        {
            "accuracy": [0.3, 0.5, 0.47, 0.2],
            "length correct": [40, 40, 30, 20],
            "think": [0.5, 0.6, 0.3, 0.0],
        },
        index=["cold start", "acc", "acc + kimi", "acc + plain"],
    )
    v = kimi_length.verdict({"table": t})
    assert "\nREPRODUCED (acc + kimi)" in v  # shorter, 0.03 below: within the margin
    assert "NOT REPRODUCED (acc + plain)" in v  # shorter but 0.3 below


@pytest.mark.slow
def test_kimi_penalty_shortens_correct_answers_within_the_margin(runs):
    torch.set_num_threads(1)
    out = {}
    for name in ("acc", "acc + kimi"):  # the fast run's first two GRPO runs: 8 steps each
        funcs, weights = kimi_length.VARIANTS[name]
        trainer, _ = train(name, "tiny-think", funcs, weights, 8, prefix="lab92-")
        out[name] = heldout(trainer.model, trainer.tokenizer, n=100)
    # measured (seed 0, 100 held-out prompts, T=1): correct answers 62.7 chars (acc) vs 61.3
    # (acc + kimi); accuracy 0.39 vs 0.41; think rate 0.85 vs 0.71
    assert out["acc + kimi"]["length correct"] < out["acc"]["length correct"]
    assert out["acc + kimi"]["think"] < out["acc"]["think"]
    assert out["acc + kimi"]["accuracy"] >= out["acc"]["accuracy"] - kimi_length.MARGIN
