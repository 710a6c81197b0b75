"""Figure builders of the core labs: the plotted numbers are labkit.core's numbers."""

import math

import numpy as np
import torch

from labkit.core import group_advantages, token_weights
from labkit.experiments.kl_table import kl_bandit, schulman_table
from labkit.plots import advantages as adv_plots
from labkit.plots import aggregation as agg_plots
from labkit.plots import kl as kl_plots


def test_kl_figures():
    df = schulman_table((0.1, 1.0), n=20_000, seed=0)
    table = kl_plots.schulman_table_figure(df)
    assert len(table.data[0].cells.values[0]) == 6
    fig = kl_plots.std_over_kl_figure(df)
    assert {t.name for t in fig.data} >= {"k1 closed form", "k3 Monte Carlo"}
    fig = kl_plots.estimator_curves(-2.0, 2.0, n=5)
    by_name = {t.name: t for t in fig.data}
    log_r = np.asarray(by_name["k3"].x)
    np.testing.assert_allclose(by_name["dk3"].y, 1 - np.exp(log_r), atol=1e-12)  # d k3 = 1 - r
    np.testing.assert_allclose(by_name["dk2"].y, -log_r, atol=1e-12)
    np.testing.assert_allclose(by_name["dk1"].y, np.ones(5))
    fig = kl_plots.k3_large_ratio_figure(hi=120.0, n=13)  # log r = 0, 10, ..., 120
    naive, ours = (np.asarray(t.y, dtype=float) for t in fig.data[1:3])
    assert np.isnan(naive[-1]) and np.isfinite(naive[8])  # float32 exp overflows past 88.7
    assert np.isfinite(ours).all()
    assert abs(ours[-1] / (math.exp(20) - 1 - 120) - 1) < 1e-6  # exp clamped at log r = 20
    bandit = kl_bandit([1.0, 0.0], [0.5, 0.5], beta=1.0, steps=50)
    assert len(kl_plots.kl_bandit_figure(bandit).data) == 6 + 2


def test_advantage_figures_plot_core_values():
    rewards = [1.0, 0.0, 0.0, 1.0, 0.5, 0.5, 0.5, 0.5]
    fig = adv_plots.advantages_figure(rewards, 4)
    trl = next(t for t in fig.data if t.name.startswith("z-score (n-1"))
    np.testing.assert_allclose(trl.y, group_advantages(torch.tensor(rewards), 4).numpy(), atol=1e-6)
    fig = adv_plots.zero_spread_figure(ps=[0.0, 0.5, 1.0], group_sizes=(4,), n_groups=400)
    sim, closed = fig.data
    assert sim.y[0] == 1.0 and sim.y[2] == 1.0 and abs(sim.y[1] - 1 / 8) < 0.06
    np.testing.assert_allclose(closed.y, [1.0, 0.125, 1.0])


def test_aggregation_figures_plot_token_weights():
    fig = agg_plots.token_weights_figure(
        [3, 1], loss_types=("grpo", "dr_grpo"), max_completion_length=4
    )
    z = np.asarray(fig.data[0].z, dtype=float)
    w = token_weights(agg_plots.lengths_to_mask([3, 1], 4), "grpo").numpy()
    np.testing.assert_allclose(z[~np.isnan(z)], w[w > 0])
    assert np.isnan(z[1, 1:]).all()  # padding is blank
    t = agg_plots.length_bias_table([5, 50, 5, 50], [1, 1, -1, -1])
    assert t["per-token push grpo"].tolist() == [0.05, 0.005, -0.05, -0.005]
    assert t["sequence push grpo"].tolist() == [0.25, 0.25, -0.25, -0.25]
    assert len(set(t["per-token push dapo"].abs())) == 1
