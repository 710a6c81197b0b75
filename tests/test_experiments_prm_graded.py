"""Process supervision on the graded task: its step labels against hand-labelled thoughts (a right
step, a wrong one, a carry, a re-check, a truncated thought), the process advantage they make,
scratchpad's labels unchanged, and ``prm_graded``'s definitions (claims name real arms and
summary columns)."""

import torch

from labkit.algos.process import ProcessGRPOTrainer
from labkit.experiments import prm_graded
from labkit.experiments.cells import HARD
from labkit.models.rollout import tokenize_pairs
from labkit.rewards.process import (
    digits_of,
    graded_step_correctness,
    process_steps,
    step_correctness,
    step_tensors,
)
from labkit.tasks.graded import graded_target


def labels(completion, prompt, task="graded"):
    return [(s.text, s.label) for s in process_steps(completion, prompt, task)]


def test_graded_steps_by_hand():
    # 12 + 07 + 93: 12+0=12, 12+7=19, 19+90=109 (a carry into the hundreds), 109+3=112
    right = "<think>12+0=12 12+7=19 19+90=109 109+3=112</think><answer>112</answer>"
    assert right == graded_target([12, 7, 93], 2)
    assert labels(right, "12+07+93=") == [
        ("12+0=12", True),
        ("12+7=19", True),
        ("19+90=109", True),
        ("109+3=112", True),
        ("112", True),
    ]
    # a wrong carry at step 3: it and the steps after it are wrong (matched in order), so is
    # the answer
    carry = "<think>12+0=12 12+7=19 19+90=119 119+3=122</think><answer>122</answer>"
    assert [lab for _, lab in labels(carry, "12+07+93=")] == [True, True, False, False, False]
    # a re-check is a right step; a wrong step then the right one: the right one counts
    recheck = "<think>3+5=8 3+5=8 8+8=17 8+8=16</think><answer>16</answer>"
    assert [lab for _, lab in labels(recheck, "3+5+8=")] == [True, True, False, True, True]
    # a thought cut off before </think>: no steps, only the (wrong) answer step on its last token
    cut = "<think>12+0=12 12+7=19 19+9"
    assert [(s.end, s.label) for s in process_steps(cut, "12+07+93=", "graded")] == [
        (len(cut), False)
    ]
    assert digits_of("12+07+93=") == 2 and digits_of("3+5+8=") == 1
    assert graded_step_correctness(
        [right, carry, recheck, cut], ["12+07+93="] * 2 + ["3+5+8="] * 2
    )[:3] == [1.0, 0.5, 0.75]
    assert graded_step_correctness([cut], ["12+07+93="]) == [None]


def test_step_tensors_on_graded_place_the_steps_on_their_last_characters():
    c = "<think>4+30=34 34+4=38</think><answer>38</answer>"  # 04+34: two steps
    ends, lab, valid = step_tensors([c, "<answer>38</answer>"], ["04+34="] * 2, T=60, task="graded")
    assert [c[e] for e in ends[0, :2].tolist()] == ["4", "8"]
    assert ends[0, 2].item() == len(c)  # the answer step: the eos token
    assert lab.tolist() == [[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]]
    assert valid.tolist() == [[True] * 3, [True, False, False]]


def test_scratchpad_labels_are_unchanged_by_the_graded_case():
    # scratchpad labels position by position: a right step after a wrong one still counts;
    # graded matches in order, so a skipped step shifts the rest
    c = "<think>3+5=9 8+8=16</think><answer>16</answer>"
    assert [lab for _, lab in labels(c, "3+5+8=", "scratchpad")] == [False, True, True]
    assert [lab for _, lab in labels(c, "3+5+8=")] == [False, False, True]
    assert step_correctness([c], ["3+5+8="]) == [0.5]  # the default task is scratchpad


def test_process_grpo_on_graded_uses_the_graded_steps():
    t = ProcessGRPOTrainer(
        "tiny",
        ["answer_match"],
        task="graded",
        max_steps=1,
        prompts_per_step=1,
        num_generations=2,
        track_kl=False,
    )
    # a skipped first step: scratchpad would label "8+8=16" right (position 2), graded does not
    skipped = "<think>3+5=9 8+8=16</think><answer>16</answer>"
    right = graded_target([3, 5, 8], rechecks=[0])  # a re-check: one more right step
    r = tokenize_pairs(t.tokenizer, list(zip(["3+5+8="] * 2, [right, skipped])))
    r.old_logp = torch.zeros(r.completion_ids.shape)  # [B, T]
    r.loss_mask = r.completion_mask.float()  # [B, T]
    r.rewards = torch.tensor([1.0, 1.0])
    r.examples = [t.task.example([3, 5, 8], 1)] * 2
    t.prepare(r)
    A = r.advantages  # [2, T]
    # group step rewards: {1, 1, 1, 1} and {0, 0, 1}: mean 5/7; the skipped thought's tokens
    # before its first step end carry r~ of its three steps, (0 + 0 + 1 - 3 * 5/7) / std < 0
    assert A[1, 0] < 0 < A[0, 0]
    e = process_steps(skipped, "3+5+8=", "graded")[1].end
    assert A[1, e + 1] > A[1, e]  # past its second (wrong) step only the right answer is left


def test_prm_graded_claims_name_real_arms_and_summary_columns():
    exp = prm_graded.EXPERIMENT
    cells = ("2x1", "3x1", "4x1", "5x1", "2x2", "3x2")
    stats = {f"{s} ({c})": 0.5 for s in ("pass", "think", "length") for c in cells}
    stats |= {
        f"{s} ({g})": 0.5 for s in ("pass", "think", "length") for g in ("hard", "easy", "all")
    }
    summary = prm_graded.summarize(stats, stats)
    for c in exp.claims:
        assert c.arm in exp.arms and c.baseline in exp.arms, c.key
        assert c.metric in summary, c.key
        assert c.direction == 1
    assert set(prm_graded.LONG) | set(prm_graded.SHORT) <= set(cells)
    assert set(HARD) <= set(cells)
    assert len(exp.seeds) >= 5 and set(exp.live["arms"]) <= set(exp.arms)


def test_the_contrasts_are_differences_of_differences():
    # process beats outcome by 0.2 on the hard cells and by 0.0 on the easy ones
    base = {"pass (all)": 0.5, "pass (5x1)": 0.5, "pass (3x2)": 0.5}
    base |= {"pass (2x1)": 0.5, "pass (3x1)": 0.5, "pass (2x2)": 0.5}
    out = prm_graded.summarize(
        base | {"pass (hard)": 0.3, "pass (easy)": 0.6},
        base | {"pass (hard)": 0.3, "pass (easy)": 0.6},
    )
    proc = prm_graded.summarize(
        base | {"pass (hard)": 0.3, "pass (easy)": 0.6},
        base | {"pass (hard)": 0.5, "pass (easy)": 0.6, "pass (3x2)": 0.9},
    )
    d = proc["pass: hard - easy"] - out["pass: hard - easy"]
    assert abs(d - 0.2) < 1e-12
    # long: (5x1 + 3x2) / 2 rose by 0.2, short unchanged
    assert abs(proc["pass: long - short"] - out["pass: long - short"] - 0.2) < 1e-12


def test_the_cell_figure_orders_cells_by_chain_steps():
    from labkit.plots.prm import cell_gain_figure

    cells = ("2x1", "3x1", "4x1", "5x1", "2x2", "3x2")
    stats = {f"{s} ({c})": 0.5 for s in ("pass", "think", "length") for c in cells}
    stats |= {
        f"{s} ({g})": 0.5 for s in ("pass", "think", "length") for g in ("hard", "easy", "all")
    }
    rows = [
        {"arm": a, "seed": s, **prm_graded.summarize(stats, stats)}
        for a in prm_graded.ARMS
        for s in (0, 1)
    ]
    import pandas as pd

    f = cell_gain_figure(pd.DataFrame(rows), "GRPO, process", "GRPO, outcome")
    assert [x.split()[0] for x in f.data[-1].x] == ["2x1", "3x1", "2x2", "4x1", "5x1", "3x2"]
    assert list(f.data[-1].y) == [0.0] * 6


def test_every_arm_is_a_valid_config():
    from labkit.algos.config import GRPOConfig
    from labkit.experiments.r1_zero import SETUP

    GRPOConfig(**SETUP)
    assert {s["trainer"] for s in prm_graded.ARMS.values()} == set(prm_graded.TRAINERS)


def test_a_short_process_arm_produces_every_claimed_column_and_its_curves(runs):
    out = prm_graded.train(
        "GRPO, process",
        prm_graded.ARMS["GRPO, process"],
        seed=0,
        steps=2,
        fast=True,
        run_name="prm_graded/x",
        tick=lambda *a: None,
    )
    assert {c.metric for c in prm_graded.EXPERIMENT.claims} <= set(out.summary)
    assert {"rechecks (3x2) after", "pass (long) gain", "think (hard) gain"} <= set(out.summary)
    assert set(prm_graded.EXPERIMENT.curves) <= set(out.curves.columns)
    assert list(out.curves["step"]) == [1, 2]
