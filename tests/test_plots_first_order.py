"""Lab 82's figures (labkit.plots.first_order) on a hand-made curves frame."""

import math

import numpy as np
import pandas as pd
import pytest

from labkit.plots.first_order import drift_figure, update_figure

CURVES = pd.DataFrame(
    {
        "arm": ["a"] * 6 + ["b"] * 2,
        "seed": [0, 0, 0, 1, 1, 1, 0, 0],
        "step": [1, 1, 2, 1, 1, 2, 1, 1],
        "update": [0, 1, 0, 0, 1, 0, 0, 1],
        "rel_err": [0.0, 0.1, 1e-5, 1e-7, 0.01, 1e-7, 1e-3, 1e-2],
        "kl": [0.0, 1e-2, 1e-12, 1e-12, 1e-4, 1e-12, 1e-6, 1e-4],
    }
)


def test_update_figure_means_log10_per_seed_then_over_seeds():
    fig = update_figure(CURVES)
    a = fig.data[0]
    assert list(a.x) == [0, 1] and a.name == "a (2 seeds)"
    # update 0: seed 0 mean(log10 max(0, 1e-9), log10 1e-5) = -7, seed 1: -7; update 1: -1, -2
    assert list(a.y) == pytest.approx([-7.0, -1.5])
    assert fig.data[1].name == "b (1 seeds)"


def test_drift_figure_leaves_out_zeros_and_guides_with_slope_one_half():
    fig = drift_figure(CURVES)
    assert [len(t.x) for t in fig.data[:2]] == [5, 2]  # a's rel_err = 0 row left out
    guide = fig.data[-1]
    x, y = np.asarray(guide.x), np.asarray(guide.y)
    slope = math.log(y[-1] / y[0]) / math.log(x[-1] / x[0])
    assert slope == pytest.approx(0.5)
