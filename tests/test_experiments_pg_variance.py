"""Policy-gradient estimators (labkit.experiments.pg_variance): the Gram-matrix statistics against
direct computation, RLOO = G/(G-1) x Dr. GRPO on the same completions, the verdict's reading,
and the directions the runs showed (seed 0, fast configuration)."""

import pandas as pd
import pytest
import torch

from labkit.algos.config import BASE_RUN
from labkit.experiments import pg_variance as pv


def test_the_experiment_trains_the_labs_base_run():
    assert pv.BASE == BASE_RUN


def test_gram_stats_against_direct_computation():
    g = torch.randn(6, 50, generator=torch.Generator().manual_seed(0), dtype=torch.float64) + 0.3
    st = pv.gram_stats(g @ g.T)
    K = g.shape[0]
    assert st["tr_cov"] == pytest.approx(float(g.var(0, unbiased=True).sum()))
    pairs = [float(g[j] @ g[k]) for j in range(K) for k in range(K) if j != k]
    assert st["sq_mean"] == pytest.approx(sum(pairs) / len(pairs))  # unbiased ||E g||^2
    assert st["rel_var"] == pytest.approx(st["tr_cov"] / st["sq_mean"])
    loo = [torch.cosine_similarity(g[k], (g.sum(0) - g[k]), 0) for k in range(K)]
    assert st["loo_cos"] == pytest.approx(float(torch.stack(loo).mean()))
    # hand values: g = (1, 0), (0, 1): each coordinate has variance 1/2, E<g_j, g_k> = 0
    assert pv.gram_stats(torch.eye(2)) | {"rms_cos": 0} == {
        "tr_cov": 1.0,
        "sq_mean": 0.0,
        "rel_var": float("inf"),
        "rms_cos": 0,
        "loo_cos": 0.0,
    }


def test_variance_table_reads_scale_and_direction():
    g = torch.randn(8, 30, generator=torch.Generator().manual_seed(1), dtype=torch.float64) + 1.0
    grads = torch.stack([g, 0.75 * g, -g])  # [E, K, N]: RLOO, Dr. GRPO (x 3/4), a sign flip
    t = pv.variance_table(grads, ["rloo", "dr_grpo", "reinforce"]).set_index("key")
    assert t.loc["dr_grpo", "|E g| / |E g_rloo|"] == pytest.approx(0.75)
    assert t.loc["dr_grpo", "cos(E g, E g_rloo)"] == pytest.approx(1.0)
    assert t.loc["reinforce", "cos(E g, E g_rloo)"] == pytest.approx(-1.0)
    assert t.loc["dr_grpo", "rel_var"] == pytest.approx(t.loc["rloo", "rel_var"])  # scale-free


def test_rloo_is_dr_grpo_times_g_over_g_minus_1_and_blind_to_a_shift():
    torch.set_num_threads(1)
    model, tok = pv.load_policy("tiny")
    kw = {"num_generations": 4, "prompts_per_step": 4, "track_kl": False}
    ts = [pv.make_trainer(k, model, tok, **kw) for k in ("rloo", "dr_grpo", "reinforce")]
    r0, r1 = (pv.fixed_batches(ts[0], 4, 1, seed=3, shift=s)[0] for s in (0.0, -1.0))
    g0, g1 = pv.policy_gradients(ts, r0), pv.policy_gradients(ts, r1)  # [E, N]
    rel = lambda a, b: float((a - b).norm() / b.norm())  # float32 rounding: ~1e-7
    assert rel(g0[1], 0.75 * g0[0]) < 1e-5  # r - mean = (G-1)/G (r - mean of the others)
    assert rel(g1[0], g0[0]) < 1e-5  # RLOO does not see the reward's zero
    assert rel(g1[2], g0[2]) > 0.1  # REINFORCE without a baseline does


def fake_results(rel, acc):
    keys = list(pv.ESTIMATORS)
    var = pd.DataFrame(
        {
            "key": keys,
            "estimator": [pv.ESTIMATORS[k][0] for k in keys],
            "rel_var": rel,
            "rel_var se": [0.01] * 6,
            "cos(E g, E g_rloo)": [1.0] * 6,
            "setting": "cold start",
            "reward_mean": 0.4,
        }
    )
    train = pd.DataFrame(
        {
            "key": keys,
            "estimator": var["estimator"],
            "heldout acc": acc,
            "value-head params": [0] * 5 + [129],
            "state MiB": [16.0] * 6,
            "steps to reward 0.8": [100.0] * 6,
        }
    )
    return {
        "variance": var,
        "training": train,
        "config": {"policy params": 1000, "steps": 5, "seed": 0},
        "score_norms": {"cold start": {"b_star": 0.1, "mean_reward": 0.4}},
    }


def test_orderings_read_the_numbers():
    textbook = pv.orderings(fake_results([3, 2, 1, 1, 1, 2], [0.5, 0.6, 0.7, 0.7, 0.7, 0.7]))
    assert textbook["reproduced"].iloc[:4].tolist() == [
        "yes",
        "yes, clearly",
        "yes, clearly",
        "yes, clearly",
    ]
    assert textbook["reproduced"].iloc[4:7].tolist() == ["yes", "no, a tie", "yes, a tie"]
    toy = fake_results([1, 2, 3, 3, 3, 2], [0.7, 0.7, 0.69, 0.69, 0.69, 0.75])
    assert pv.orderings(toy)["reproduced"].iloc[1:7].tolist() == [
        "no, clearly",
        "no, clearly",
        "no, clearly",
        "no, a tie",
        "no",
        "no",
    ]
    assert "b* = E[r |s|^2] / E[|s|^2] = 0.10" in pv.verdict(toy)


@pytest.mark.slow
def test_baselines_raise_the_variance_on_the_toy_unless_the_reward_zero_moves():
    torch.set_num_threads(1)
    res = pv.run(fast=True, seed=0, progress=False)  # 5 steps; K = 8 batches of 16 x 4
    v = {s: d.set_index("key") for s, d in res["variance"].groupby("setting")}
    cold, shifted = v["cold start"], v["cold start, reward r - 1"]
    after = v[f"after {res['config']['steps']} GRPO steps"]
    for t in (cold, after):  # what the runs showed: no baseline is the least noisy here...
        assert t.loc["reinforce", "rel_var"] < t.loc["rloo", "rel_var"]
        assert t.loc["reinforce", "rel_var"] < t.loc["grpo", "rel_var"]
    assert cold.loc["reinforce", "cos(E g, E g_rloo)"] > 0.9  # ...and unbiased all the same
    # moving the reward's zero: REINFORCE's variance jumps past RLOO's, RLOO does not move
    assert shifted.loc["reinforce", "rel_var"] > 3 * cold.loc["reinforce", "rel_var"]
    assert shifted.loc["reinforce", "rel_var"] > shifted.loc["rloo", "rel_var"]
    assert shifted.loc["rloo", "rel_var"] == pytest.approx(cold.loc["rloo", "rel_var"], rel=1e-3)
    assert cold.loc["dr_grpo", "rel_var"] == pytest.approx(cold.loc["rloo", "rel_var"], rel=1e-4)
    n = res["score_norms"]["cold start"]
    assert n["b_star"] < n["mean_reward"] / 2  # b = mean reward overshoots 2 b*
    t = res["training"].set_index("key")
    assert t.loc["ppo", "value-head params"] == 129 and t["heldout acc"].between(0, 1).all()
    assert len(pv.verdict(res).splitlines()) == len(pv.orderings(res)) + 3
