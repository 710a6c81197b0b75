"""The run doctor: each rule named on a run log built with its fault (and its evidence), real
faulty runs named, a TRL-shaped log read, and a healthy demo-like run with no warning."""

import pytest

import labkit as lk
from labkit.algos.config import DEMO_DEFAULTS
from labkit.integrations.trl_bridge import map_metrics
from labkit.runs.diagnose import diagnose
from labkit.runs.log import RunLog

N, G = 12, 4


def healthy_metrics(step: int) -> dict:
    return {
        "step": step,
        "reward/mean": 0.4 + 0.01 * step,
        "accuracy": 0.4 + 0.01 * step,
        "entropy": 0.5 - 0.005 * step,
        "kl/k3": 0.01,
        "ratio/max": 1.3,
        "clip/region": 0.02,
        "grad_norm": 1.0 + 0.05 * (step % 3),
        "adv/mean_abs": 0.6,
        "adv/frac_zero_std": 0.3,
        "len/truncated_frac": 0.0,
    }


def healthy_samples(step: int, fns=("digit_partial",)) -> list[dict]:
    rows = []
    for g in range(4):
        for i in range(G):
            r = float((i + g + step) % 2)
            rows.append(
                {
                    "step": step,
                    "group": g,
                    "prompt": f"{g}+1=",
                    "completion": str(i),
                    "reward": r,
                    "correct": r == 1.0,
                    "truncated": False,
                    "length": 2,
                    **{f"rewards/{f}": r for f in fns},
                }
            )
    return rows


def make_log(metrics=None, samples=None, config=None) -> RunLog:
    cfg = {
        "learning_rate": 5e-4,
        "num_iterations": 2,
        "reward_funcs": ["digit_partial"],
        **(config or {}),
    }
    log = RunLog(config=cfg)
    for s in range(1, N + 1):
        m = {**healthy_metrics(s), **(metrics(s) if metrics else {})}
        log.log_step(m, samples(s) if samples else healthy_samples(s))
    return log


def rules(log) -> list[str]:
    return [f.rule for f in diagnose(log)]


def test_a_healthy_log_gets_no_warning():
    assert rules(make_log()) == []


def test_isolated_kl_and_ratio_spikes_are_not_a_blow_up():
    # the 600-step demo (seed 0) has kl/k3 up to 2.5 and ratio/max up to 20 on a few single
    # steps (k3's heavy tail; the max over every token and update) while both stay low around
    # them; a blow-up must hold (a rolling median over SUSTAIN steps)
    spikes = make_log(
        metrics=lambda s: {
            "kl/k3": 2.5 if s in (7, 12) else 0.25,
            "ratio/max": 20.0 if s == 9 else 1.4,
        }
    )
    assert not [r for r in rules(spikes) if r.startswith("blow_up")]


def flat_samples(step):  # every group all 0 in digit_partial
    return [
        {**r, "reward": 0.0, "correct": False, "rewards/digit_partial": 0.0}
        for r in healthy_samples(step)
    ]


def two_fn_samples(step):
    return [
        {
            **r,
            "rewards/length_target": -30.0 * (r["completion"] == "0") - 10.0 * r["group"],
            "rewards/digit_partial": r["reward"] * 0.01,
        }
        for r in healthy_samples(step, ("digit_partial",))
    ]


FAULTS = {
    "zero_spread[reward]": {"samples": flat_samples},
    "never_varies[digit_partial]": {"samples": flat_samples},
    "truncation": {"metrics": lambda s: {"len/truncated_frac": 0.97}},
    "format_never_matched[format_tags]": {
        "samples": lambda s: [{**r, "rewards/format_tags": 0.0} for r in healthy_samples(s)],
        "config": {"reward_funcs": ["digit_partial", "format_tags"]},
    },
    "dominates[length_target]": {
        "samples": two_fn_samples,
        "config": {"reward_funcs": ["digit_partial", "length_target"]},
    },
    "reward_hacking": {"metrics": lambda s: {"accuracy": 0.4}},
    "entropy_collapse": {"metrics": lambda s: {"entropy": 0.5 * 0.5**s}},
    "blow_up[kl/k3]": {"metrics": lambda s: {"kl/k3": 0.01 if s < 8 else 3.0}},
    "blow_up[ratio/max]": {"metrics": lambda s: {"ratio/max": 1.2 if s < 10 else 40.0}},
    "clip_never": {"metrics": lambda s: {"clip/region": 0.0}},
    "clip_high": {"metrics": lambda s: {"clip/region": 0.45}},
    "grad_spike": {"metrics": lambda s: {"grad_norm": 80.0 if s == 7 else 1.0}},
    "lr_too_high": {"config": {"learning_rate": 0.1}},
    "lr_too_low": {"config": {"learning_rate": 1e-9}},
    "advantages_zero": {"metrics": lambda s: {"adv/mean_abs": 0.0}},
}


@pytest.mark.parametrize("rule", FAULTS)
def test_each_fault_is_named_with_its_evidence_and_fix(rule):
    found = {f.rule: f for f in diagnose(make_log(**FAULTS[rule]))}
    assert rule in found, list(found)
    f = found[rule]
    assert f.evidence and f.fix and f.steps


def test_the_evidence_names_the_steps_and_the_hacking_completions():
    d = {
        f.rule: f
        for f in diagnose(make_log(metrics=lambda s: {"grad_norm": 80.0 if s == 7 else 1.0}))
    }
    assert d["grad_spike"].steps == "7" and "80" in d["grad_spike"].evidence
    log = make_log(metrics=lambda s: {"accuracy": 0.4})
    hack = {f.rule: f for f in diagnose(log)}["reward_hacking"]
    assert "highest-scoring wrong completions" in hack.evidence
    assert "0.400 -> 0.400" in hack.evidence


def test_a_trl_shaped_log_is_read(tmp_path):
    """Metrics mapped from TRL's logs (no samples, no entropy): the rules that can, fire."""
    log = RunLog(config={"learning_rate": 5e-4})
    for s in range(1, N + 1):
        log.log_step(
            map_metrics(
                {
                    "reward": 0.1,
                    "frac_reward_zero_std": 0.95,
                    "completions/clipped_ratio": 1.0,
                    "kl": 0.01,
                },
                s,
                "grpo",
            )
        )
    assert set(rules(log)) == {"zero_spread", "truncation"}


def test_real_faulty_runs_are_named(runs):
    small = {"num_generations": 4, "prompts_per_step": 4, "track_kl": False}
    tr = lk.GRPOTrainer(
        reward_funcs=["exact_match"], run_name="cut", max_completion_length=1, max_steps=3, **small
    )
    tr.train(progress=False)
    assert "truncation" in rules(runs / "cut")  # read from the folder
    tr = lk.GRPOTrainer(
        reward_funcs=[lambda completions, **kw: [1.0] * len(completions)], max_steps=3, **small
    )
    tr.train(progress=False)
    assert {"zero_spread[reward]", "never_varies[<lambda>]", "advantages_zero"} <= set(
        rules(tr.log)
    )


@pytest.mark.slow
def test_the_demo_run_gets_no_warning():
    cfg = {**DEMO_DEFAULTS, "max_steps": 20}
    tr = lk.GRPOTrainer(reward_funcs=cfg.pop("reward_funcs"), **cfg)
    tr.train(progress=False)
    assert rules(tr.log) == []


def test_reward_versions_say_which_source_and_weights_produced_which_steps(runs):
    def mine(completions, **kwargs):
        return [float(len(c) == 2) for c in completions]

    tr = lk.GRPOTrainer(
        reward_funcs=["digit_partial"],
        run_name="ver",
        max_steps=4,
        num_generations=2,
        prompts_per_step=2,
        track_kl=False,
    )
    tr.step()
    tr.update(reward_funcs=["digit_partial", mine], reward_weights=[1.0, 0.5])
    tr.step()
    tr.update(reward_weights=[1.0, 2.0])  # a weight change alone is a new version too
    tr.step()
    v = diagnose(runs / "ver").versions
    assert list(v["steps"]) == ["1-1", "2-2", "3-3"]
    assert v["reward_version"].iloc[0].startswith("digit_partial@")
    assert "mine@" in v["reward_version"].iloc[1] and v["reward_version"].iloc[1].endswith("x0.5")
    assert v["reward_version"].iloc[2].endswith("x2")
    assert tr.scorer.funcs[1][1] == 2.0  # and the new weight is the one used
