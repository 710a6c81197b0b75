"""Clipping made visible (labkit.experiments.clipping): the direction the fixed-seed runs showed.

Measured (seed 0, lr 1e-3, demo config; full 60 steps, and the 8 steps of fast mode): mu = 1
never clips; clip/region rises with mu at every eps and falls as eps widens at every mu > 1
(full: mu=2 0.037/0.023/0.015, mu=4 0.071/0.058/0.041 for eps 0.1/0.2/0.3)."""

import pandas as pd
import pytest

from labkit.experiments import clipping


@pytest.mark.slow
def test_clip_fraction_rises_with_mu_and_falls_with_eps_on_a_fixed_seed():
    res = clipping.run(seed=0, mus=(1, 2, 4), epsilons=(0.1, 0.3), steps=8, progress=False)
    t = res["table"]
    assert all(clipping.checks(t).values()), t
    assert clipping.verdict(t).startswith("Reproduced")
    # with mu = 1 epsilon is never used: the two runs are the same run, step for step
    a, b = (res["runs"][f"mu=1, eps={e}"].metrics["reward/mean"] for e in (0.1, 0.3))
    assert a.tolist() == b.tolist()
    log = res["runs"]["mu=4, eps=0.1"]
    step, sample = clipping.most_clipped(log)
    t = log.tokens
    row = t[(t["step"] == step) & (t["sample"] == sample)].iloc[0]
    assert sum(row["clipped"]) > 0


def test_checks_and_verdict_read_the_table():
    rows = [(1, 0.1, 0.0), (1, 0.3, 0.0), (2, 0.1, 0.04), (2, 0.3, 0.05)]
    t = pd.DataFrame(rows, columns=["mu", "epsilon", "clip/region"])
    c = clipping.checks(t)
    assert c["mu = 1 clips nothing"] and c["mu > 1 clips"]
    assert c["clip fraction rises with mu (every eps)"]
    assert not c["clip fraction falls as eps widens (every mu > 1)"]  # 0.04 < 0.05
    assert clipping.verdict(t).startswith("Partly reproduced")
