"""PPO with a value head: refusals, GAE wiring, the critic learns, the policy improves (resume:
tests/test_runs_resume.py)."""

import pytest
import torch

import labkit as lk
from labkit.algos.ppo import PPOConfig, PPOTrainer
from labkit.core import gae, kl_k1, whiten


def starts_with_one(completions, **kwargs):
    """A reward the state reveals after the first token: the critic can learn it exactly."""
    return [float(c.startswith("1")) for c in completions]


@pytest.mark.parametrize(
    "kw, message",
    [
        ({"value_head": False}, "value_head=False: PPO's advantages come from a critic"),
        ({"lam": 1.5}, r"lam=1.5: GAE's lambda must be in \[0, 1\]"),
        ({"gamma": -0.1}, "gamma=-0.1"),
        ({"beta": -1.0}, "beta=-1.0"),
        ({"num_mini_batches": 3}, "num_mini_batches=3 does not divide the batch"),
        ({"epsilon_high": 0.1}, "epsilon_high=0.1 < epsilon=0.2"),
        ({"value_learning_rate": 0.0}, "value_learning_rate=0.0"),
        ({"value_warmup_steps": -1}, "value_warmup_steps=-1"),
    ],
)
def test_bad_ppo_config_is_refused(kw, message):
    with pytest.raises(ValueError, match=message):
        PPOConfig(**kw)


def test_token_rewards_put_the_score_on_the_last_token_and_kl_on_every_token():
    tr = PPOTrainer(prompts_per_step=2, num_generations=2, max_steps=3, beta=0.5, diagnostics=4)
    tr.step()  # move the policy away from pi_ref
    r = tr.prepare(tr.collect())
    kl = kl_k1(r.old_logp, r.ref_logp) * r.loss_mask
    want = -0.5 * kl
    want[torch.arange(len(r)), r.lengths - 1] += r.rewards
    assert torch.allclose(r.token_rewards, want, atol=1e-6)  # [B, T]
    assert torch.equal(tr.token_rewards(r), r.token_rewards)
    # advantages and returns are GAE on these rewards and the critic's values, A whitened
    A, R = gae(r.token_rewards, r.values, r.completion_mask, tr.config.gamma, tr.config.lam)
    assert torch.allclose(r.returns, R) and torch.allclose(r.advantages, whiten(A, r.loss_mask))
    # the logged per-token advantage is GAE on the logged rewards and values, then whitened
    row = tr.log.tokens.iloc[-1]
    assert len(row["value"]) == len(row["return"]) == len(row["advantage_t"]) == len(row["tokens"])
    _A, R = gae(
        torch.tensor([row["reward"]]),
        torch.tensor([row["value"]]),
        torch.ones(1, len(row["value"])),
        1.0,
        0.95,
    )
    assert torch.allclose(R, torch.tensor([row["return"]]), atol=1e-5)


def test_token_rows_hold_grpos_keys_from_the_last_epoch_and_draw_as_grpos():
    """Every recorded completion carries what GRPO records (ratio, clipped, weight, loss, k1-k3)
    as its minibatch of the last epoch computed it, plus PPO's own A_t, V, R_t and r_t."""
    tr = PPOTrainer(
        prompts_per_step=4,
        num_generations=2,
        num_mini_batches=4,
        ppo_epochs=2,
        beta=0.1,
        learning_rate=3e-3,
        diagnostics=8,
        max_steps=2,
        seed=2,
    )
    tr.step()
    tr.step()
    grpo = lk.GRPOTrainer(prompts_per_step=2, num_generations=2, max_steps=1, beta=0.1)
    grpo.step()
    rows, want = tr.log.tokens, set(grpo.log.tokens.columns)
    assert want | {"advantage_t", "value", "return", "reward"} == set(rows.columns)
    step = rows[rows["step"] == 2]
    assert sorted(step["sample"]) == list(range(8))  # every completion, whichever minibatch
    samples = tr.log.samples
    for _, r in step.iterrows():
        T = len(r["tokens"])
        assert all(len(r[k]) == T for k in ("logp", "ratio", "clipped", "weight", "k1", "k3"))
        lp, old, ref = (torch.tensor(r[k]) for k in ("logp", "old_logp", "ref_logp"))
        assert torch.allclose(torch.tensor(r["ratio"]), (lp - old).exp(), atol=1e-5)
        assert torch.allclose(torch.tensor(r["k1"]), lp - ref, atol=1e-5)
        assert torch.allclose(torch.tensor(r["k3"]), (ref - lp).exp() - (ref - lp) - 1, atol=1e-5)
        A = torch.tensor(r["advantage_t"])
        eps = tr.config.epsilon
        out = ((torch.tensor(r["ratio"]) - 1).abs() > eps) & (
            (torch.tensor(r["ratio"]) - 1) * A > 0
        )
        assert torch.equal(torch.tensor(r["clipped"]).bool(), out)  # clipped: outside, pushed out
        assert r["advantage"] == pytest.approx(r["advantage_t"][0])
        s = samples[(samples["step"] == 2)].iloc[int(r["sample"])]
        assert s["advantage"] == pytest.approx(r["advantage"]) and s["length"] == T
    # the last epoch runs after the 4 updates of the first: no completion's ratio is 1 any more
    ratios = [max(abs(x - 1) for x in r) for r in step["ratio"]]
    assert min(ratios) > 1e-5
    m = tr.log.metrics.iloc[-1]  # over all 8 updates; the first (ratio 1) alone shows nothing
    assert m["ratio/max"] >= m["ratio/max_last"] > 1 and m["kl/old_last"] > 0
    fig = lk.plots.run_step.token_heatmap(tr.log, step=2, sample=3)
    assert list(fig.data[0].y) == ["advantage", "ratio", "clipped", "k1", "k2", "k3"]
    kl = lk.plots.run_step.kl_tokens(tr.log, step=2, sample=3)
    assert list(kl.data[0].y) == step[step["sample"] == 3].iloc[0]["k1"]


def test_the_critic_warm_up_fits_the_head_and_leaves_the_policy_where_it_was():
    """Critic-only rounds: the policy's weights are untouched, the head moves off 0, the
    schedule does not advance, and step 1 starts from the warmed critic."""
    tr = PPOTrainer(
        reward_funcs=[starts_with_one], prompts_per_step=4, num_generations=2, max_steps=1, seed=0
    )
    before = {k: v.clone() for k, v in tr.model.state_dict().items()}
    stats = tr.warm_up_critic(3)
    assert all(torch.equal(before[k], v) for k, v in tr.model.state_dict().items())
    assert tr.value_head.bias.abs().item() > 0 and set(stats) == {"loss", "vf/explained_var"}
    assert tr.global_step == 0 and tr.scheduler.last_epoch == 0
    tr2 = PPOTrainer(
        reward_funcs=[starts_with_one],
        prompts_per_step=4,
        num_generations=2,
        max_steps=1,
        seed=0,
        value_warmup_steps=3,
    )
    m = tr2.train(progress=False).metrics
    assert {"vf/warmup_loss", "vf/warmup_explained_var"} <= set(m)
    assert m["vf/value_mean"].iloc[0] != 0.0  # V = 0 at step 1 without a warm-up


@pytest.mark.slow
def test_the_critic_learns_value_loss_falls_explained_variance_rises():
    tr = PPOTrainer(
        reward_funcs=[starts_with_one],
        prompts_per_step=8,
        num_generations=4,
        learning_rate=3e-4,
        vf_coef=1.0,
        max_steps=20,
        seed=0,
    )
    tr.train(progress=False)
    m = tr.log.metrics
    assert m["vf/loss"].tail(5).mean() < 0.5 * m["vf/loss"].head(2).mean()
    assert m["vf/explained_var"].iloc[0] == pytest.approx(0.0, abs=1e-6)  # V = 0 at the start
    assert m["vf/explained_var"].tail(5).mean() > 0.25


@pytest.mark.slow
def test_ppo_improves_heldout_accuracy_on_a_fixed_seed(heldout_gain):
    tr = PPOTrainer(
        prompts_per_step=16, num_generations=4, learning_rate=3e-4, max_steps=30, seed=0
    )
    before, after = heldout_gain(tr, 500)
    assert after >= before + 0.08, (before, after)


def test_ppo_on_a_lora_policy_trains_the_adapter_and_the_value_head_only(lora):
    lora, tok = lora
    tr = PPOTrainer(lora, tokenizer=tok, prompts_per_step=4, num_generations=2, max_steps=2)
    assert tr.ref_model is None and tr.adapter_ref
    n_adapter = sum(p.numel() for p in lora.parameters() if p.requires_grad)
    assert sum(p.numel() for p in tr.params) == n_adapter + 129  # + the head (128 + bias)
    tr.train(progress=False)
    assert tr.log.metrics["kl/k1"].iloc[0] == pytest.approx(0.0, abs=1e-6)
