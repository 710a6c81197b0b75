"""RLHF's three stages end to end: SFT lifts accuracy, the RM ranks clear errors, RL runs on it."""

import pytest

from labkit.rlhf import rlhf_three_stages


def test_rl_choice_is_checked():
    with pytest.raises(ValueError, match="rl='dpo'"):
        rlhf_three_stages(rl="dpo")


@pytest.mark.slow
def test_three_stages_end_to_end():
    out = rlhf_three_stages(sft_steps=20, rm_prompts=1024, rm_steps=150, rl_steps=8, probe=300,
                            beta=0.1, learning_rate=1e-4)
    acc = out["accuracy"]
    assert acc["sft"] >= acc["start"] + 0.05  # stage 1: demonstrations help
    assert out["rm_heldout_accuracy"]["clear errors"] > 0.85  # stage 2
    m = out["rl_log"].metrics  # stage 3 optimised the RM's score, not the verifier's
    assert list(m["step"]) == list(range(1, 9)) and "rewards/reward_model/mean" in m.columns
    assert acc["rl"] >= acc["sft"] - 0.1  # the KL penalty (beta 0.1) keeps it near the SFT model
