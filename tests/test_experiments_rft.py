"""RFT vs online RFT vs GRPO on graded (labkit.experiments.rft, labkit.algos.rft): each arm's
gradient coefficient by hand, offline RFT samples from the frozen start and nothing else moves
it, the arms draw the same prompts and (at step 1) the same samples, the claims name real arms
and summary columns, a short arm produces its columns; and the directions the stored run
showed."""

import pandas as pd
import pytest
import torch

from labkit.algos.config import GRPOConfig
from labkit.algos.grpo import GRPOTrainer
from labkit.algos.rft import OfflineRFTTrainer
from labkit.experiments import rft
from labkit.experiments.cells import STATS
from labkit.experiments.lagrange import CELL_NAMES
from labkit.models.rollout import rollout

SMALL = {
    "task": "graded",
    "reward_funcs": ["answer_match"],
    "prompts_per_step": 2,
    "num_generations": 2,
    "max_completion_length": 12,
    "track_kl": False,
    "seed": 3,
}


def held_out(value: float) -> dict:
    groups = [*CELL_NAMES, "hard", "easy", "all"]
    return {f"{s} ({g})": value for s in STATS for g in groups}


def test_claims_name_arms_and_summary_columns():
    cold = held_out(0.4) | rft.pooled(held_out(0.4))
    m = pd.DataFrame({"step": [1, 2], "accuracy": [0.5, 0.5]})
    columns = set(rft.summarize(cold, held_out(0.6) | rft.pooled(held_out(0.6)), m))
    for c in rft.EXPERIMENT.claims:
        assert c.metric in columns and c.arm in rft.ARMS, c.key
        assert c.baseline in rft.ARMS and c.direction == 1, c.key
    assert set(rft.EXPERIMENT.live["arms"]) <= set(rft.ARMS)
    assert len(rft.EXPERIMENT.seeds) >= 5
    assert {"samples drawn", "right samples drawn"} <= columns


@pytest.mark.parametrize("arm", list(rft.ARMS))
def test_each_arm_is_a_valid_config_of_the_shared_set_up(arm):
    fields = {k: v for k, v in rft.SETUP.items() if k != "reward_funcs"}
    settings = {k: v for k, v in rft.ARMS[arm].items() if k != "offline"}
    cfg = GRPOConfig(**fields, **settings)
    assert cfg.num_iterations == 1 and cfg.beta == 0 and cfg.loss_type == "grpo"
    assert cfg.learning_rate == rft.SETUP["learning_rate"]  # one lr for all three
    assert cfg.advantage_estimator == ("grpo" if arm == rft.GRPO else "reinforce")


def test_the_gradient_coefficients_by_hand():
    """Rewards [1, 0, 0, 0 | 1, 1, 1, 1] (G = 4): RFT's coefficient is I(o) (1, 0, 0, 0, 1, 1,
    1, 1); GRPO's is the group z-score with the n - 1 std (0.75 / 0.5 = 1.5 for the lone
    right answer, -0.25 / 0.5 = -0.5 for the wrong ones) and 0 in the all-right group."""
    r = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0])
    cfg = {k: v for k, v in rft.SETUP.items() if k not in ("reward_funcs", "reward_weights")}
    adv = {}
    for arm in (rft.ONLINE, rft.GRPO):
        t = GRPOTrainer.__new__(GRPOTrainer)
        t.config = GRPOConfig(**cfg, advantage_estimator=rft.ARMS[arm]["advantage_estimator"])
        adv[arm] = t.advantages(r)
    assert adv[rft.ONLINE].tolist() == r.tolist()
    want = torch.tensor([1.5, -0.5, -0.5, -0.5, 0.0, 0.0, 0.0, 0.0])
    torch.testing.assert_close(adv[rft.GRPO], want, atol=1e-3, rtol=0)


def test_offline_rft_samples_from_the_frozen_start_while_the_policy_moves(runs):
    always = lambda completions, **kw: [1.0] * len(completions)  # every sample kept: A = 1
    t = OfflineRFTTrainer(
        "tiny-graded", learning_rate=1e-2, max_steps=2, **(SMALL | {"reward_funcs": [always]})
    )
    start = [p.detach().clone() for p in t.model.parameters()]
    assert t.sampler is t.sft_model and t.config.advantage_estimator == "reinforce"
    t.train(progress=False)
    moved = any(not torch.equal(a, p) for a, p in zip(start, t.model.parameters()))
    kept = all(torch.equal(a, p) for a, p in zip(start, t.sft_model.parameters()))
    assert moved and kept
    state = t.generator.get_state()
    r = t.generate()
    t.generator.set_state(state)
    again = rollout(t.sft_model, t.tokenizer, r.prompts, t.max_len, generator=t.generator)
    assert r.completions == again.completions  # drawn by pi_sft, not pi_theta


def test_offline_rft_refuses_a_ratio_or_another_coefficient():
    with pytest.raises(ValueError, match="num_iterations"):
        OfflineRFTTrainer("tiny-graded", num_iterations=2, **SMALL)
    with pytest.raises(ValueError, match="advantage_estimator"):
        OfflineRFTTrainer("tiny-graded", advantage_estimator="grpo", **SMALL)


def test_the_arms_draw_the_same_prompts_and_the_same_first_samples():
    offline = OfflineRFTTrainer("tiny-graded", **SMALL)
    online = GRPOTrainer("tiny-graded", advantage_estimator="reinforce", **SMALL)
    grpo = GRPOTrainer("tiny-graded", **SMALL)
    first = [t.generate() for t in (offline, online, grpo)]
    assert first[0].completions == first[1].completions == first[2].completions
    second = [t.generate().prompts for t in (offline, online, grpo)]
    assert second[0] == second[1] == second[2] != first[0].prompts


def test_the_curves_start_at_the_cold_start_and_carry_the_probes():
    cold = rft.pooled(held_out(0.4))
    m = pd.DataFrame({"step": [1, 2, 3], "accuracy": [0.2, 0.3, 0.4]})
    probes = pd.DataFrame([{"step": 3, **rft.pooled(held_out(0.7)), "per cell": 128}])
    c = rft.curves(m, probes, cold).set_index("step")
    assert c.index.tolist() == [0, 1, 2, 3]
    assert c.loc[0, "held-out pass (pool)"] == pytest.approx(0.4)
    assert c.loc[3, "held-out pass (pool)"] == pytest.approx(0.7)
    assert c["held-out think (pool)"].isna().tolist() == [False, True, True, False]


def test_a_short_offline_arm_produces_its_columns(runs):
    torch.set_num_threads(1)
    out = rft.train(
        rft.OFFLINE,
        rft.ARMS[rft.OFFLINE],
        seed=0,
        steps=2,
        fast=True,
        run_name="rft/x",
        tick=lambda *a: None,
    )
    s = out.summary
    assert s["samples drawn"] == 2 * 64 and 0 <= s["right samples drawn"] <= 128
    assert {"pass (pool) after", "pass (hard) after", "think (2x2) gain"} <= set(s)
    assert set(rft.CURVES) - {"adv/frac_zero_std"} <= set(out.curves)
    assert out.curves["step"].tolist() == [0, 1, 2]
    assert out.curves["held-out pass (pool)"].notna().all()  # fast: a probe every step
