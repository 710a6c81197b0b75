"""Dr. GRPO's length and std biases (labkit.experiments.dr_grpo): the setup that gives length
room (tiny-babble on addition_ramble) and ties it to wrong answers (tiny-babble-wrong's card,
truncation scored 0), the std-bias table against hand-computed values, the
slope, and the experiment's arms and claims. The runs themselves: the lab's live cell in fast
mode (tests/test_notebooks.py) and the stored result (tests/test_results_tables.py)."""

import pandas as pd
import pytest
import torch

import labkit as lk
from labkit.algos.config import GRPOConfig
from labkit.core import group_advantages
from labkit.experiments import dr_grpo
from labkit.models.policy import char_tokenizer
from labkit.models.rollout import rollout
from labkit.rewards import get_reward
from labkit.rewards.runtime import is_inline
from labkit.rewards.truncation import TruncatedZero, truncated
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


def test_wrong_babble_cold_start_rambles_after_its_wrong_answers():
    card = lk.checkpoint_card("tiny-babble-wrong")  # scripts/make_babble_checkpoint.py
    assert card["long_frac_wrong"] > 2 * card["long_frac_right"]
    assert card["len_mean_wrong"] > card["len_mean_right"] + 1
    assert 0.05 < card["leading_pass_rate"] < 0.5 and card["truncated_frac"] > 0.05
    assert card["dtype"] == "float16" and card["wrong_babble"] > card["babble"]
    assert dr_grpo.MODEL == "tiny-babble-wrong"


def test_truncated_completions_score_zero():
    eos = char_tokenizer().eos_token_id
    r = TruncatedZero("leading_match", max_len=4, eos_token_id=eos)
    ids = [[1, 1, 1, 1], [1, 1, 1, eos], [1, 1, eos], [1, 1, 1, 1]]
    # truncated and right -> 0; ended at the limit -> 1; ended early -> 1; truncated, wrong -> 0
    got = r(["42 1", "42 ", "42", "41 1"], completion_ids=ids, answer=["42"] * 4)
    assert got == [0.0, 1.0, 1.0, 0.0] and r.__name__ == "leading_match_ended"
    assert dr_grpo.reward().max_len == dr_grpo.SETUP["max_completion_length"]
    assert not truncated([], 4, eos)
    assert is_inline(r)  # no reward process (a worker with one never exits)


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
    dr = dr_grpo.std_bias(fake_samples(groups, "none")).set_index("group accuracy")
    grpo = dr_grpo.std_bias(fake_samples(groups, "group")).set_index("group accuracy")
    # no std: mean |A| = 2k(G-k)/G^2 -> 0.375, 0.5, 0.375; the all-right group is left out
    assert list(dr.index) == [0.25, 0.5, 0.75]
    assert dr.loc[0.25, "mean |A|"] == pytest.approx(0.375, abs=1e-4)
    assert dr.loc[0.5, "mean |A|"] == pytest.approx(0.5, abs=1e-4)
    # z-score with the n-1 std: 0.75 at k = 1 or 3, 0.866 at k = 2
    assert grpo.loc[0.25, "mean |A|"] == pytest.approx(0.75, abs=1e-3)
    assert grpo.loc[0.5, "mean |A|"] == pytest.approx(0.866, abs=1e-3)
    s = dr_grpo.std_summary(fake_samples(groups, "group"), 4)
    assert s["abs(A) extremes / middle"] == pytest.approx(0.75 / 0.866, abs=1e-3)
    assert s["mean abs(A), 2 of 4 right"] == pytest.approx(0.866, abs=1e-3)
    s = dr_grpo.std_summary(fake_samples(groups, "none"), 4)
    assert s["abs(A) extremes / middle"] == pytest.approx(0.75, abs=1e-3)


def test_slope_reads_the_trend():
    steps = list(range(1, 11))
    m = pd.DataFrame({"step": steps, "up": [4 + 0.1 * s for s in steps], "flat": 4.0})
    assert dr_grpo.slope(m, "up") == pytest.approx(0.1)
    assert dr_grpo.slope(m, "flat") == pytest.approx(0.0, abs=1e-9)


def test_arms_are_valid_configs_and_claims_name_real_columns():
    setup = {k: v for k, v in dr_grpo.SETUP.items() if k != "reward_funcs"}
    for arm in dr_grpo.ARMS.values():
        GRPOConfig(**(setup | arm))
    columns = {f"{k} slope" for k in dr_grpo.SLOPES} | {
        f"{k} (last 10%)" for k in [*dr_grpo.LENGTHS, "accuracy"]
    }
    columns |= set(dr_grpo.std_summary(fake_samples([[1, 0, 0, 0], [1, 1, 0, 0]], "none"), 4))
    for c in dr_grpo.EXPERIMENT.claims:
        assert c.arm in dr_grpo.ARMS and c.baseline in (None, *dr_grpo.ARMS), c.key
        assert c.metric in columns, c.key
    assert set(dr_grpo.EXPERIMENT.live["arms"]) <= set(dr_grpo.ARMS)
    assert len(dr_grpo.EXPERIMENT.seeds) >= 5
