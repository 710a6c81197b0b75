"""Language consistency (labkit.experiments.language): every arm a valid config with the
consistency reward's weight where it belongs, and each claim judged on an arm and a summary
column the experiment produces. The runs: the lab's live cell in fast mode and the stored
result."""

from labkit.algos.config import GRPOConfig
from labkit.experiments import language, r1_zero
from labkit.rewards import REWARDS

HELDOUT = ("accuracy", "well_formed", "think", "mixed", "length", "length correct")


def test_arms_are_valid_configs_and_differ_only_in_the_consistency_weight():
    assert set(language.REWARDS) <= set(REWARDS)
    weights = {name: arm["reward_weights"] for name, arm in language.ARMS.items()}
    for w in weights.values():
        GRPOConfig(**(r1_zero.SETUP | {"reward_weights": [*w, 0.0, 0.0, 0.0]}))
        assert len(w) == len(language.REWARDS)
    assert weights["acc + format"][:2] == weights["acc + format + consistency"][:2]
    assert weights["acc + format"][2] == 0.0 < weights["acc + format + consistency"][2]


def test_every_claim_names_a_real_arm_and_summary_column():
    columns = set(HELDOUT) | {"mixed before", "accuracy before"}
    for c in language.EXPERIMENT.claims:
        assert c.arm in language.ARMS and c.baseline in language.ARMS, c.key
        assert c.metric in columns, c.key
    assert set(language.EXPERIMENT.live["arms"]) <= set(language.ARMS)
