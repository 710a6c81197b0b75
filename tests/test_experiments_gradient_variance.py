"""The gradient-variance instrument (labkit.experiments.gradient_variance): the Gram-matrix
statistics against direct computation, the cross statistics' scale and direction, and, on the
tiny policy, RLOO = G/(G-1) x Dr. GRPO on the same completions, blind to the reward's zero where
REINFORCE is not."""

import pytest
import torch

from labkit.experiments import gradient_variance as pv


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
    dist = "|E g - E g_rloo|^2 / |E g_rloo|^2"
    assert t.loc["dr_grpo", dist] == pytest.approx(0.25**2)
    assert t.loc["reinforce", dist] == pytest.approx(4.0)  # E g = -E g_rloo
    assert t.loc["rloo", dist] == pytest.approx(0.0, abs=1e-12)


def test_rloo_is_dr_grpo_times_g_over_g_minus_1_and_blind_to_a_shift():
    torch.set_num_threads(1)
    model, tok = pv.load_policy("tiny")
    kw = {"num_generations": 4, "prompts_per_step": 4, "track_kl": False}
    ts = [pv.make_trainer(k, model, tok, **kw) for k in ("rloo", "dr_grpo", "reinforce")]
    r0 = pv.fixed_batches(ts[0], 4, 1, seed=3)[0]
    r1 = pv.shifted(r0, -1.0)  # the same completions, every reward - 1
    g0 = pv.policy_gradients([(t, r0) for t in ts])  # [E, N]
    g1 = pv.policy_gradients([(t, r1) for t in ts])  # [E, N]
    rel = lambda a, b: float((a - b).norm() / b.norm())  # float32 rounding: ~1e-7
    assert rel(g0[1], 0.75 * g0[0]) < 1e-5  # r - mean = (G-1)/G (r - mean of the others)
    assert rel(g1[0], g0[0]) < 1e-5  # RLOO does not see the reward's zero
    assert rel(g1[2], g0[2]) > 0.1  # REINFORCE without a baseline does
