"""R1-Zero at toy scale (labkit.experiments.r1_zero): the per-sample metrics logged as
weight-0 rewards, the verdict on hand-made tables, and (slow) the directions a fixed-seed run
showed."""

import pandas as pd
import pytest
import torch

import labkit as lk
from labkit.experiments import r1_zero

THINK = "<think>3+5=8 8+8=16</think><answer>16</answer>"
MIXED = "<think>d+f=i 8+8=16</think><answer>16</answer>"
DIRECT = "<answer>16</answer>"


def test_metrics_per_completion():
    c = [THINK, MIXED, DIRECT, "16", "<think></think><answer>16</answer>"]
    assert r1_zero.well_formed(c) == [1.0, 1.0, 1.0, 0.0, 1.0]
    assert r1_zero.thinks(c) == [1.0, 1.0, 0.0, 0.0, 0.0]
    assert r1_zero.mixed(c) == [0.0, 1.0, None, None, None]
    assert r1_zero.mixed(["<think>1+b=c</think><answer>3</answer>"]) == [1.0]  # within a step


def test_weight_zero_metrics_do_not_change_the_reward(runs):
    trainer, _ = r1_zero.train(
        "unit",
        "tiny",
        ["answer_match", "think_format"],
        [1.0, 0.5],
        1,
        max_completion_length=8,
        prompts_per_step=2,
    )
    m = trainer.log.metrics.iloc[0]
    s = trainer.log.samples
    want = s["rewards/answer_match"] + 0.5 * s["rewards/think_format"]
    assert (s["reward"] - want).abs().max() < 1e-6
    assert {"rewards/well_formed/mean", "rewards/thinks/mean"} <= set(m.index)


def table(acc=(0.2, 0.4), think=(0.5, 0.9), length=(30.0, 45.0)):
    row = {
        "accuracy before": acc[0],
        "accuracy after": acc[1],
        "think before": think[0],
        "think after": think[1],
        "length before": length[0],
        "length after": length[1],
    }
    flat = {**row, "think after": 0.0, "think before": 0.0}
    return pd.DataFrame(
        [
            {"run": "think + format", **row},
            {"run": "think, acc only", **row},
            {"run": "direct + format", **flat},
        ]
    ).set_index("run")


def test_verdict_reads_the_numbers():
    assert "\nREPRODUCED (aha)" in r1_zero.verdict({"table": table()})
    assert "NOT REPRODUCED (aha)" in r1_zero.verdict({"table": table(length=(45.0, 30.0))})
    assert "NOT REPRODUCED (aha)" in r1_zero.verdict({"table": table(acc=(0.4, 0.3))})


@pytest.mark.slow
def test_rl_from_the_thinking_cold_start_thinks_more_and_longer(runs):
    torch.set_num_threads(1)
    before = r1_zero.heldout(*lk.load_policy("tiny-think"), n=100)
    trainer, _ = r1_zero.train(
        "think + format", "tiny-think", ["answer_match", "think_format"], [1.0, r1_zero.W_FORMAT], 8
    )
    after = r1_zero.heldout(trainer.model, trainer.tokenizer, n=100)
    # measured (seed 0, 8 steps, 100 held-out prompts, T=1): think rate 0.49 -> 0.92, length
    # 42.0 -> 60.1 chars; accuracy 0.49 -> 0.40 (down this early, so not asserted up; see lab 90)
    assert after["think"] > before["think"] + 0.2
    assert after["length"] > before["length"] + 5
