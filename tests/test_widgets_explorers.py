"""KL and advantage explorers: slider/text in, figure data and tables out, against closed forms
and an independent computation."""

import math

import numpy as np
import pytest

from labkit.experiments.kl_table import closed_form
from labkit.plots.kl_explorer import _categorical, exact_moments, kl_explorer_table
from labkit.widgets import AdvantageExplorer, KLExplorer


def test_kl_explorer_gaussian_table_is_schulmans_closed_form():
    w = KLExplorer(mu=1.0, n=20_000)
    rows = {r["estimator"]: r for r in w.table}
    for k in ("k1", "k2", "k3"):
        assert (rows[k]["exact bias/KL"], rows[k]["exact std/KL"]) == closed_form(1.0, k)
        assert rows[k]["MC std/KL"] == pytest.approx(rows[k]["exact std/KL"], rel=0.08)
    assert rows["k2"]["MC bias/KL"] == pytest.approx(0.25, abs=0.05)
    w.mu.value = 0.5
    assert "mu = 0.5" in w.fig.layout.title.text
    cells = w.fig.data[3].cells.values
    assert list(cells[0]) == ["k1", "k2", "k3"]
    assert float(cells[4][0]) == pytest.approx(2 / 0.5, abs=1e-4)  # k1: std/KL = 2/mu
    assert w.fig.layout.shapes[0].x0 == pytest.approx(0.5**2 / 2)  # the true KL


def test_kl_explorer_categorical_exact_values_match_a_direct_sum():
    mu = 0.7
    log_q, log_p = (t.numpy() for t in _categorical(mu))
    q, lr = np.exp(log_q), log_p - log_q
    kl = float(np.sum(q * -lr))
    ks = {"k1": -lr, "k2": lr**2 / 2, "k3": np.expm1(lr) - lr}
    ex = exact_moments("categorical", mu)
    assert ex["KL"] == pytest.approx(kl, rel=1e-12)
    for name, k in ks.items():
        mean = np.sum(q * k)
        assert ex[f"{name} bias/KL"] == pytest.approx(mean / kl - 1, abs=1e-10)
        assert ex[f"{name} std/KL"] == pytest.approx(math.sqrt(np.sum(q * (k - mean) ** 2)) / kl)
    assert ex["k1 bias/KL"] == pytest.approx(0, abs=1e-12)  # k1 and k3 are unbiased
    assert ex["k3 bias/KL"] == pytest.approx(0, abs=1e-12)
    rows = kl_explorer_table("categorical", mu, n=200_000)
    for r in rows:
        assert r["MC std/KL"] == pytest.approx(r["exact std/KL"], rel=0.03)
    w = KLExplorer(mu=mu, setting="categorical", n=5_000)
    assert "categorical" in w.fig.layout.title.text
    with pytest.raises(ValueError, match="mu=0"):
        exact_moments("gaussian", 0.0)


def test_advantage_explorer_reproduces_the_reference_group():
    w = AdvantageExplorer(rewards="1, 0, 0, 1", G=4)
    by_name = {t.name: t for t in w.fig.data}
    assert list(by_name["z-score (population std)"].y) == pytest.approx([1, -1, -1, 1], abs=1e-6)
    assert list(by_name["z-score (n-1 std, TRL)"].y) == pytest.approx(
        [0.866, -0.866, -0.866, 0.866], abs=1e-3
    )
    w.rewards.value = "1, 1, 1, 1, 0, 1"
    assert "6 rewards do not split into groups of G = 4" in w.message.value
    w.G.value = 3
    assert w.message.value == ""
    assert list(by_name["RLOO"].y)[:3] == [0.0, 0.0, 0.0]  # zero-spread group
    assert list(by_name["r - mean (Dr. GRPO)"].y)[3:] == pytest.approx([1 / 3, -2 / 3, 1 / 3])
    w.rewards.value = "1, oops"
    assert "'oops' is not a number" in w.message.value.replace("&#x27;", "'")
