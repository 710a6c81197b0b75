"""Dr. GRPO's length and std biases (labkit.experiments.dr_grpo): the setup that gives length
room (tiny-babble on addition_ramble), the tables against hand-computed values, and the
directions the fixed-seed fast run showed."""

import pandas as pd
import pytest
import torch

import labkit as lk
from labkit.core import group_advantages
from labkit.experiments import dr_grpo
from labkit.models.rollout import rollout
from labkit.rewards import get_reward
from labkit.tasks import get_task
from labkit.tasks.ramble import leading_int


def test_ramble_task_grades_the_leading_integer():
    t = get_task("addition_ramble")
    assert t.verify("42 17 9", "42") and t.verify("42", "42")
    assert not t.verify("421", "42") and not t.verify(" x 42", "42")
    assert leading_int("") is None
    assert get_reward("leading_match")(["42 1", "7"], answer=["42", "42"]) == [1.0, 0.0]
    assert len(t.train) + len(t.heldout) == 10000


def long_fraction(name):
    model, tok = lk.load_policy(name)
    prompts = [e.prompt for e in get_task("addition").heldout[:256]]
    r = rollout(
        model, tok, prompts, 16, temperature=1.0, generator=torch.Generator().manual_seed(1)
    )
    return (r.lengths > 4).float().mean().item()


def test_babble_policy_can_be_long_and_the_cold_start_cannot():
    torch.set_num_threads(1)
    assert long_fraction("tiny") < 0.02  # measured: 1 of 256 here; 0 of 512 with seed 0
    assert 0.1 < long_fraction("tiny-babble") < 0.5  # the card says 0.24 on 512 prompts


class FakeLog:
    def __init__(self, metrics=None, samples=None):
        self.metrics, self.samples = metrics, samples


def fake_samples(rewards_by_group, scale, G=4):
    r = torch.tensor(rewards_by_group, dtype=torch.float).flatten()  # [B]
    adv = group_advantages(r, G, scale)  # [B]
    return pd.DataFrame(
        {
            "step": 1,
            "group": [i // G for i in range(len(r))],
            "correct": (r > 0).tolist(),
            "advantage": adv.tolist(),
        }
    )


def test_std_bias_table_against_hand_values():
    groups = [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]]
    runs = {
        "grpo": FakeLog(samples=fake_samples(groups, "group")),
        "dr_grpo": FakeLog(samples=fake_samples(groups, "none")),
    }
    t = dr_grpo.std_bias(runs).set_index(["run", "group accuracy"])
    # no std: mean |A| = 2k(G-k)/G^2 -> 0.375, 0.5, 0.375; the all-right group is left out
    assert t.loc[("dr_grpo", 0.25), "mean |A|"] == pytest.approx(0.375, abs=1e-4)
    assert t.loc[("dr_grpo", 0.5), "mean |A|"] == pytest.approx(0.5, abs=1e-4)
    # z-score with the n-1 std: 0.75 at k = 1 or 3, 0.866 at k = 2
    assert t.loc[("grpo", 0.25), "mean |A|"] == pytest.approx(0.75, abs=1e-3)
    assert t.loc[("grpo", 0.5), "mean |A|"] == pytest.approx(0.866, abs=1e-3)
    std = dr_grpo.std_bias(runs)
    assert dr_grpo.extremes_over_middle(std, "grpo") == pytest.approx(0.75 / 0.866, abs=1e-3)
    assert dr_grpo.extremes_over_middle(std, "dr_grpo") == pytest.approx(0.75, abs=1e-3)


def test_slopes_and_verdict():
    steps = list(range(1, 11))
    up = pd.DataFrame(
        {
            "step": steps,
            "accuracy": 0.5,
            "len/correct": 4.0,
            "len/incorrect": [4 + 0.1 * s for s in steps],
            "len/mean": 4.0,
            "len/truncated_frac": 0.0,
        }
    )
    flat = up.assign(**{"len/incorrect": 4.0})
    t = dr_grpo.length_table({"grpo": FakeLog(up), "dr_grpo": FakeLog(flat)})
    assert t.loc["grpo", "len/incorrect slope"] == pytest.approx(0.1)
    assert t.loc["dr_grpo", "len/incorrect slope"] == pytest.approx(0.0, abs=1e-9)
    groups = [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0]]
    std = dr_grpo.std_bias(
        {
            "grpo": FakeLog(samples=fake_samples(groups, "group")),
            "dr_grpo": FakeLog(samples=fake_samples(groups, "none")),
        }
    )
    v = dr_grpo.verdict({"lengths": t, "std_bias": std})
    assert "REPRODUCED (length)" in v and "NOT" not in v
    t2 = dr_grpo.length_table({"grpo": FakeLog(flat), "dr_grpo": FakeLog(up)})
    assert "NOT REPRODUCED (length)" in dr_grpo.verdict({"lengths": t2, "std_bias": std})


@pytest.mark.slow
def test_fast_run_directions(runs):
    torch.set_num_threads(1)
    res = dr_grpo.run(fast=True, seed=0, progress=False)  # 2 x 20 steps
    t = res["lengths"]
    g, d = t.loc["grpo", "len/incorrect slope"], t.loc["dr_grpo", "len/incorrect slope"]
    # measured (seed 0, 20 steps, L_max = max_completion_length, pi_old from the sampler):
    # -0.077 and -0.075 tokens/step. Both losses shorten wrong answers here (the paper's growth
    # under GRPO does not show); which one shortens them faster is within 0.002 and flipped
    # with the setup, so it is not asserted.
    assert g < 0 and d < 0
    std = res["std_bias"]
    # measured: extremes / middle mean |A| = 0.87 with the std, 0.75 without (G = 4)
    assert dr_grpo.extremes_over_middle(std, "grpo") > dr_grpo.extremes_over_middle(std, "dr_grpo")
    v = dr_grpo.verdict(res)
    assert "NOT REPRODUCED (length)" in v and "\nREPRODUCED (std)" in v
