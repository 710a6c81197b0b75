"""Prioritized sampling and a curriculum (labkit.experiments.curriculum): every arm is a sampler
rule on a valid GRPO config, a seed fixes the pool, the summary holds every column a claim is
judged on. The runs themselves: the lab's live cell in fast mode (tests/test_notebooks.py) and
the stored result (tests/test_results_tables.py)."""

import types

import pandas as pd

from labkit.algos.config import GRPOConfig
from labkit.experiments import curriculum


def test_every_arm_is_a_sampler_rule_on_a_valid_config_and_a_seed_fixes_the_pool():
    setup = {k: v for k, v in curriculum.SETUP.items() if k != "reward_funcs"}
    pools = []
    for arm, settings in curriculum.ARMS.items():
        GRPOConfig(**(setup | settings))
        s = curriculum.sampler(arm, seed=3, steps=10)
        assert len(s.train) == curriculum.POOL
        pools.append([e.prompt for e in s.train])
    assert all(p == pools[0] for p in pools)


def test_summary_holds_every_claimed_column(monkeypatch):
    stats = {"pass (all)": 0.5, "pass (hard)": 0.1}
    monkeypatch.setattr(curriculum, "heldout_cells", lambda *a, **k: stats)
    monkeypatch.setattr(curriculum, "cold_start_cells", lambda *a, **k: stats)
    m = pd.DataFrame({"step": [1, 2], "adv/frac_zero_std": [0.5, 0.25], "accuracy": [0.4, 0.6]})
    task = curriculum.sampler("uniform", seed=0, steps=2)
    a, b = task.train[:2]
    task.seen = {e.prompt: 0 for e in task.train} | {a.prompt: 3, b.prompt: 1}
    t = types.SimpleNamespace(log=types.SimpleNamespace(metrics=m), task=task, model=0, tokenizer=0)
    s = curriculum.summary(t, per_cell=4, seed=0)
    assert s["zero-spread groups"] == 0.375 and s["batch accuracy"] == 0.5
    assert s["prompts never drawn"] == 1 - len({a.prompt, b.prompt}) / len(task.seen)
    hard = [e.columns["bucket"] in curriculum.HARD for e in (a, b)]
    assert s["hard share of draws"] == (3 * hard[0] + 1 * hard[1]) / 4
    for c in curriculum.EXPERIMENT.claims:
        assert c.arm in curriculum.ARMS and c.baseline in curriculum.ARMS, c.key
        assert c.metric in s, c.key
    assert set(curriculum.EXPERIMENT.live["arms"]) <= set(curriculum.ARMS)
