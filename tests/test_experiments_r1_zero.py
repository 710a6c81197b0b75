"""R1-Zero at toy scale (labkit.experiments.r1_zero): the per-sample metrics logged as weight-0
rewards, every arm a valid config, and each claim judged on an arm and a summary column the
experiment produces. The runs themselves: the lab's live cell in fast mode
(tests/test_notebooks.py) and the stored result (tests/test_results_tables.py)."""

import labkit as lk
from labkit.algos.config import GRPOConfig
from labkit.experiments import r1_zero

THINK = "<think>3+5=8 8+8=16</think><answer>16</answer>"
MIXED = "<think>d+f=i 8+8=16</think><answer>16</answer>"
DIRECT = "<answer>16</answer>"
HELDOUT = ("accuracy", "well_formed", "think", "mixed", "length", "length correct")


def summary_columns() -> set[str]:
    """What ``train`` puts in a summary: held-out stats before/after/gain and the slope."""
    stats = dict.fromkeys(HELDOUT, 0.0)
    return set(r1_zero.before_after(stats, stats)) | {"len/mean slope (2nd half)"}


def test_metrics_per_completion():
    c = [THINK, MIXED, DIRECT, "16", "<think></think><answer>16</answer>"]
    assert r1_zero.well_formed(c) == [1.0, 1.0, 1.0, 0.0, 1.0]
    assert r1_zero.thinks(c) == [1.0, 1.0, 0.0, 0.0, 0.0]
    assert r1_zero.mixed(c) == [0.0, 1.0, None, None, None]
    assert r1_zero.mixed(["<think>1+b=c</think><answer>3</answer>"]) == [1.0]  # within a step


def test_weight_zero_metrics_do_not_change_the_reward(runs):
    trainer = lk.GRPOTrainer(
        "tiny",
        reward_funcs=["answer_match", "think_format", *r1_zero.METRICS],
        reward_weights=[1.0, 0.5, 0.0, 0.0, 0.0],
        task="scratchpad",
        max_steps=1,
        max_completion_length=8,
        prompts_per_step=2,
        save_steps=0,
    )
    trainer.train(progress=False)
    m = trainer.log.metrics.iloc[0]
    s = trainer.log.samples
    want = s["rewards/answer_match"] + 0.5 * s["rewards/think_format"]
    assert (s["reward"] - want).abs().max() < 1e-6
    assert {"rewards/well_formed/mean", "rewards/thinks/mean"} <= set(m.index)


def test_arms_are_valid_configs():
    for arm in r1_zero.ARMS.values():
        weights = [*arm["reward_weights"], 0.0, 0.0, 0.0]
        GRPOConfig(**(r1_zero.SETUP | {"reward_weights": weights}))
        assert arm["model"] in ("tiny-think", "tiny-direct")


def test_every_claim_names_a_real_arm_and_summary_column():
    columns = summary_columns()
    for c in r1_zero.EXPERIMENT.claims:
        assert c.arm in r1_zero.ARMS and c.baseline in (None, *r1_zero.ARMS), c.key
        assert c.metric in columns, c.key
    assert set(r1_zero.EXPERIMENT.live["arms"]) <= set(r1_zero.ARMS)
    assert len(r1_zero.EXPERIMENT.seeds) >= 5
