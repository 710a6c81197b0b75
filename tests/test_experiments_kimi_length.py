"""Kimi's length penalty and long2short (labkit.experiments.kimi_length): the plain penalty,
the long2short pairs, every GRPO arm a valid config, and each claim judged on an arm and a
summary column the experiment produces. The runs: the lab's live cell in fast mode and the
stored result."""

from labkit.algos.config import GRPOConfig
from labkit.experiments import kimi_length, r1_zero
from labkit.rewards import REWARDS

HELDOUT = ("accuracy", "well_formed", "think", "mixed", "length", "length correct")


def test_plain_length_charges_every_answer():
    assert kimi_length.plain_length(["x" * 18]) == [-0.25]


def test_grpo_arms_are_valid_configs_with_known_rewards():
    kinds = {arm["kind"] for arm in kimi_length.ARMS.values()}
    assert kinds == {"probe", "grpo", "dpo"}
    for name, arm in kimi_length.ARMS.items():
        if arm["kind"] != "grpo":
            continue
        assert set(arm["rewards"]) <= set(REWARDS) | {"plain_length"}, name
        weights = [*arm["weights"], 0.0, 0.0, 0.0]
        GRPOConfig(**(r1_zero.SETUP | {"reward_weights": weights}))


def test_long2short_pairs_prefer_the_shorter_correct_answer():
    pairs = kimi_length.long2short_pairs(4, seed=0)
    for p in pairs:
        assert len(p["chosen"]) < len(p["rejected"]), p


def test_every_claim_names_a_real_arm_and_summary_column():
    for c in kimi_length.EXPERIMENT.claims:
        assert c.arm in kimi_length.ARMS and c.baseline in kimi_length.ARMS, c.key
        assert c.metric in HELDOUT, c.key
    assert set(kimi_length.EXPERIMENT.live["arms"]) <= set(kimi_length.ARMS)
