"""The glass-box GRPO loop: config checks, the run log, failing rewards, and real learning."""

import json

import pandas as pd
import pytest

import labkit as lk
from labkit.algos.config import GRPOConfig
from labkit.rewards import RewardError


@pytest.mark.parametrize(
    "kw, field",
    [
        ({"num_generations": 1}, "num_generations=1"),
        ({"beta": -0.1}, "beta=-0.1"),
        ({"epsilon_high": 0.1}, "epsilon_high=0.1 < epsilon=0.2"),
        ({"loss_type": "ppo"}, "loss_type='ppo'"),
        ({"scale_rewards": "std"}, "scale_rewards='std'"),
        ({"temperature": -1}, "temperature=-1"),
    ],
)
def test_bad_config_is_refused_naming_the_field(kw, field):
    with pytest.raises(ValueError, match=field.replace("(", r"\(")):
        GRPOConfig(**kw)


def test_unknown_reward_name_and_weight_mismatch_are_refused():
    with pytest.raises(ValueError, match="unknown reward 'acc'"):
        lk.GRPOTrainer(reward_funcs=["acc"])
    with pytest.raises(ValueError, match="reward_weights has 2 values for 1"):
        lk.GRPOTrainer(reward_funcs=["exact_match"], reward_weights=[1.0, 2.0])


def test_run_log_is_written_as_the_run_goes(runs):
    tr = lk.GRPOTrainer(
        run_name="r", max_steps=2, num_generations=4, prompts_per_step=4, beta=0.04, diagnostics=2
    )
    tr.train(progress=False)
    run = lk.load_run(runs / "r")
    assert json.loads((runs / "r" / "config.json").read_text())["beta"] == 0.04
    m, s, t = run.metrics, run.samples, run.tokens
    assert list(m["step"]) == [1, 2] and len(s) == 2 * 16 and len(t) == 2 * 2
    for key in [
        "reward/mean",
        "rewards/digit_partial/mean",
        "adv/frac_zero_std",
        "kl/k1",
        "kl/k2",
        "kl/k3",
        "clip/ratio_low",
        "len/mean",
        "len/correct",
        "len/incorrect",
        "len/truncated_frac",
        "entropy",
        "grad_norm",
    ]:
        assert key in m.columns, key
    assert {"prompt", "completion", "reward", "advantage", "length", "truncated", "correct"} <= set(
        s.columns
    )
    # group advantages: each group's advantages sum to zero
    sums = s.groupby(["step", "group"])["advantage"].sum()
    assert (sums.abs() < 1e-4).all()
    row = t.iloc[0]
    assert len(row["tokens"]) == len(row["logp"]) == len(row["ratio"]) == len(row["k3"])
    assert isinstance(pd.read_json(runs / "r" / "samples.jsonl", lines=True), pd.DataFrame)


def test_a_failing_reward_stops_with_its_name_and_keeps_the_log(runs):
    calls = []

    def flaky(completions, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyError("answer_text")
        return [1.0] * len(completions)

    tr = lk.GRPOTrainer(
        reward_funcs=[flaky], run_name="f", max_steps=5, num_generations=2, prompts_per_step=2
    )
    with pytest.raises(RewardError, match="'flaky' raised KeyError"):
        tr.train(progress=False)
    assert list(lk.load_run(runs / "f").metrics["step"]) == [1, 2]
    assert tr.global_step == 2


def test_update_is_validated_and_applied_between_steps():
    tr = lk.GRPOTrainer(max_steps=2, num_generations=2, prompts_per_step=2)
    with pytest.raises(ValueError, match="beta=-1"):
        tr.update(beta=-1)
    tr.update(beta=0.1, learning_rate=1e-4, reward_funcs=["exact_match"])
    m = tr.step()
    assert tr.config.beta == 0.1 and "rewards/exact_match/mean" in m
    assert m["lr"] == pytest.approx(1e-4)
    ev = tr.log.events.iloc[0]
    assert ev["step"] == 0 and ev["beta"] == 0.1 and ev["reward_funcs"] == ["exact_match"]


@pytest.mark.slow
def test_grpo_improves_heldout_accuracy_on_a_fixed_seed(heldout_gain):
    """A short run of the demo's configuration on seed 0 lifts held-out sampled accuracy."""
    from labkit.cli import DEMO_DEFAULTS

    cfg = {**DEMO_DEFAULTS, "max_steps": 60, "seed": 0}
    tr = lk.GRPOTrainer(reward_funcs=cfg.pop("reward_funcs"), track_kl=False, **cfg)
    before, after = heldout_gain(tr, 1000)
    m = tr.log.metrics
    assert after >= before + 0.10, (before, after)
    assert m["reward/mean"].tail(10).mean() > m["reward/mean"].head(10).mean()


def test_a_new_run_under_a_used_name_keeps_the_old_one(runs):
    for _ in range(2):
        lk.GRPOTrainer(run_name="same", max_steps=1, num_generations=2, prompts_per_step=2).train(
            progress=False
        )
    assert len(lk.load_run(runs / "same.prev-1").metrics) == 1
    assert len(lk.load_run(runs / "same").metrics) == 1
    assert sorted(p.name for p in runs.iterdir()) == ["same", "same.prev-1"]
