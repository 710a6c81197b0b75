"""RLHF's three stages end to end: SFT lifts accuracy, the RM ranks the SFT policy's own near
misses, and RL against the RM's score (never the verifier) lifts held-out verifier accuracy."""

import math

import pytest

from labkit.algos.rlhf import agreement, rlhf_three_stages


def test_rl_choice_is_checked():
    with pytest.raises(ValueError, match="rl='dpo'"):
        rlhf_three_stages(rl="dpo")


def test_agreement_counts_same_prompt_pairs_only():
    assert agreement(["a", "a", "b", "b"], [1.0, 0.0, 0.0, 1.0], [True, False, True, False]) == 0.5
    assert math.isnan(agreement(["a", "b"], [0.0, 1.0], [True, False]))  # no same-prompt pair


@pytest.mark.slow
def test_three_stages_end_to_end_rl_on_the_rm_lifts_verifier_accuracy():
    """Seed 0: 20 SFT steps, the shipped RM, 100 GRPO steps of 16 x 16 (lr 5e-4, mu 2)."""
    out = rlhf_three_stages(sft_steps=20, rl_steps=100, probe=500)
    acc = out["accuracy"]
    assert acc["sft"] >= acc["start"] + 0.05  # stage 1: demonstrations help
    rm = out["rm_heldout_accuracy"]  # stage 2: it ranks what this policy gets wrong
    assert rm["policy near misses"] > 0.9 and rm["clear errors"] > 0.95
    m = out["rl_log"].metrics  # stage 3 optimised the RM's score, not the verifier's
    assert list(m["step"]) == list(range(1, 101)) and "rewards/reward_model/mean" in m.columns
    r = m["rewards/reward_model/mean"]
    assert r.tail(20).mean() > r.head(20).mean()
    assert acc["rl"] >= acc["sft"] + 0.08, acc  # and the verifier agrees: no reward hacking here
    assert out["agreement"]["rm_verifier_agreement"].mean() > 0.85


@pytest.mark.slow
def test_a_reward_model_trained_in_place_then_ppo():
    """reward_model=None trains stage 2 here (a few steps), then PPO runs on it."""
    out = rlhf_three_stages(
        sft_steps=0,
        reward_model=None,
        rm_steps=5,
        rl="ppo",
        rl_steps=2,
        probe=50,
        prompts_per_step=4,
        num_generations=2,
    )
    assert len(out["rm_log"].metrics) == 5 and out["reward_model"].readout == "head+logprob"
    assert list(out["rl_log"].metrics["step"]) == [1, 2] and len(out["agreement"]) == 2
