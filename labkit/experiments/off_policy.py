"""GSPO and CISPO against GRPO's token-level PPO-clip under off-policy stress (lab 80).

Three objectives on the same seed, budget and stress (mu = 4 inner updates on each batch, a
learning rate 2x the demo's, constant):
- GRPO, token ratio, PPO-clip (DeepSeekMath 2402.03300):
      l_{i,t} = -min(rho_{i,t} A_i, clip(rho_{i,t}, 1 - eps, 1 + eps) A_i),  eps = 0.2;
- GSPO (Zheng et al. 2025, 2507.18071): one length-normalised ratio per sequence
      s_i = exp((1/|o_i|) sum_t log rho_{i,t}),  l_i = -min(s_i A_i, clip(s_i, 1 - eps, 1 + eps_h) A_i),
  with the paper's clip range eps = 3e-4, eps_h = 4e-4 (its sec. 5.1): s_i is a geometric mean,
  so it moves far less than a token ratio and a much smaller range is needed;
- CISPO (MiniMax-M1, 2506.13585): REINFORCE on every token with a clipped, detached IS weight
      l_{i,t} = -sg(min(rho_{i,t}, eps_max)) A_i log pi_theta,  eps_max = 5.0 (TRL's default).
Aggregation: GRPO and GSPO use the per-sequence mean (``loss_type="grpo"``, as TRL's GSPO
recipe), CISPO the token mean over the batch (its paper's). No KL penalty (beta = 0).

:func:`silenced_tokens` counts CISPO's claim directly: build one batch, move pi_theta away from
pi_old by a few updates, then on the same log-probs compute the per-token gradient of each loss
w.r.t. log pi_theta (autograd) and count the tokens whose PPO-clip gradient is exactly 0 while
CISPO's is not.
Departure: reward stability is read from the training batches' reward (no held-out set), over
a short run; "drawdown" is the largest fall of the 10-step moving mean below its running peak.
"""

from __future__ import annotations

import pandas as pd
import torch

from labkit.algos.grpo import GRPOTrainer
from labkit.core import policy_loss
from labkit.models.rollout import completion_logprobs

CLAIM = (
    "GSPO (Zheng et al. 2025, arXiv 2507.18071): a token-level importance ratio is a noisy, "
    "ill-posed correction whose variance grows with off-policyness and length and can collapse "
    "training; one length-normalised ratio per sequence, clipped in a much smaller range (3e-4 / "
    "4e-4), trains more stably. CISPO (MiniMax-M1, arXiv 2506.13585): PPO-clip drops the gradient "
    "of tokens whose ratio leaves the clip range (often rare, important 'fork' tokens); clipping "
    "the importance weight instead of the update keeps a gradient on every token, and trains "
    "faster and more stably."
)
ARMS = {
    "grpo (token, PPO-clip 0.2)": {"loss_type": "grpo"},
    "gspo (sequence, 3e-4/4e-4)": {
        "loss_type": "grpo",
        "importance_sampling_level": "sequence",
        "epsilon": 3e-4,
        "epsilon_high": 4e-4,
    },
    "cispo (IS weight <= 5)": {"loss_type": "cispo", "epsilon_high": 5.0},
}
"""The three objectives, by name: GRPOConfig overrides."""
STRESS = {
    "num_iterations": 4,
    "learning_rate": 1e-3,
    "lr_scheduler_type": "constant",
    "num_generations": 4,
    "prompts_per_step": 32,
    "beta": 0.0,
}
"""Off-policy stress: mu = 4 updates per batch at 2x the demo's learning rate (5e-4)."""


def stability(metrics: pd.DataFrame, window: int = 10) -> dict:
    """Reward stability of one run's metrics: final reward (mean of the last quarter), the
    largest drawdown of the ``window``-step moving mean below its running peak, the std of the
    step-to-step reward change, and the ratio spread and clipping over the run.

    >>> m = pd.DataFrame({"reward/mean": [0., 1., 0., 1.], "ratio/max": 1.5, "ratio/min": .5,
    ...                   "kl/old": .01, "clip/region": .1, "accuracy": .5})
    >>> stability(m, window=1)["drawdown"]
    1.0
    """
    r = metrics["reward/mean"]
    ma = r.rolling(window, min_periods=1).mean()
    q = max(1, len(r) // 4)
    return {
        "reward (first 5)": r.iloc[:5].mean(),
        "reward (last 1/4)": r.iloc[-q:].mean(),
        "accuracy (last 1/4)": metrics["accuracy"].iloc[-q:].mean(),
        "drawdown": float((ma.cummax() - ma).max()),
        "reward step std": float(r.diff().std()) if len(r) > 2 else float("nan"),
        "ratio/max": metrics["ratio/max"].max(),
        "ratio/min": metrics["ratio/min"].min(),
        "kl/old": metrics["kl/old"].mean(),
        "clip/region": metrics["clip/region"].mean(),
    }


def collapsed(row) -> bool:
    """A run collapsed when its final reward is below half its reward over the first 5 steps."""
    return row["reward (last 1/4)"] < 0.5 * row["reward (first 5)"]


def compare_stability(t: pd.DataFrame, base: str, arm: str, what: str) -> str:
    """One verdict line: is ``arm`` more stable than ``base`` (smaller drawdown and a final
    reward no lower), and did either collapse?"""
    b, k = t.loc[base], t.loc[arm]
    if collapsed(b) and collapsed(k):
        return (
            f"{what}: NOT REPRODUCED: both runs collapsed (final reward "
            f"{b['reward (last 1/4)']:.3f} and {k['reward (last 1/4)']:.3f}, from "
            f"{b['reward (first 5)']:.3f}); the stress is too strong to compare them "
            f"(the second ends {'lower' if k['reward (last 1/4)'] < b['reward (last 1/4)'] else 'no lower'})."
        )
    ok = k["drawdown"] < b["drawdown"] and k["reward (last 1/4)"] >= b["reward (last 1/4)"]
    return f"{what} (smaller drawdown, final reward no lower): " + (
        "REPRODUCED." if ok else "NOT REPRODUCED on this toy."
    )


def run(
    fast: bool = False,
    seeds=(0, 1),
    steps: int | None = None,
    stress: dict | None = None,
    arms: dict | None = None,
    progress: bool = True,
) -> dict:
    """Train each arm under ``stress`` for ``steps`` steps on each seed (same seed, same prompts
    at step 1, same budget). Full: 60 steps x 2 seeds; fast: 6 steps x 1 seed.

    Returns ``{"table": DataFrame (arm, seed, stability columns), "logs": {name: RunLog} of the
    first seed, "silenced": silenced_tokens(...) dict, "config": dict}``.
    """
    steps = steps or (6 if fast else 60)
    seeds = seeds[:1] if fast else seeds
    stress, arms = {**STRESS, **(stress or {})}, arms or ARMS
    rows, logs = [], {}
    for seed in seeds:
        for name, kw in arms.items():
            tr = GRPOTrainer("tiny", task="addition", seed=seed, max_steps=steps, **stress, **kw)
            log = tr.train(progress=progress)
            rows.append({"arm": name, "seed": seed, **stability(log.metrics)})
            if seed == seeds[0]:
                logs[name] = log
    return {
        "table": pd.DataFrame(rows),
        "logs": logs,
        "silenced": silenced_tokens(seed=seeds[0], stress=stress),
        "config": {"steps": steps, "seeds": list(seeds), **stress},
    }


def summary(results: dict) -> pd.DataFrame:
    """The table averaged over seeds, one row per arm."""
    return results["table"].drop(columns="seed").groupby("arm", sort=False).mean()


def token_grads(logp, old_logp, adv, mask, epsilon: float = 0.2, cispo_cap: float = 5.0):
    """Per-token d loss / d log pi_theta [B, T] of PPO-clip (``grpo``) and CISPO on the same
    log-probs, and PPO-clip's per-token ``clipped`` flag: (g_ppo, g_cispo, clipped)."""
    lp = logp.detach().clone().requires_grad_()  # [B, T]
    loss, st = policy_loss(lp, old_logp, adv, mask, loss_type="grpo", epsilon=epsilon)
    (g_ppo,) = torch.autograd.grad(loss, lp)  # [B, T]
    loss, _ = policy_loss(lp, old_logp, adv, mask, loss_type="cispo", epsilon_high=cispo_cap)
    (g_cispo,) = torch.autograd.grad(loss, lp)  # [B, T]
    return g_ppo, g_cispo, st["per_token"]["clipped"]


def count_silenced(g_ppo, g_cispo, clipped, adv, mask) -> dict:
    """Token counts from :func:`token_grads`: valid tokens, tokens with A != 0, tokens PPO-clip
    clips, tokens whose PPO-clip gradient is 0 (and of those, how many CISPO keeps), tokens
    whose CISPO gradient is 0 while PPO-clip's is not.

    >>> g1, g2 = torch.tensor([[0., 1.]]), torch.tensor([[2., 1.]])
    >>> count_silenced(g1, g2, torch.tensor([[1., 0.]]), torch.ones(1), torch.ones(1, 2))["ppo zero, cispo nonzero"]
    1
    """
    valid = mask != 0  # [B, T]
    adv = adv.unsqueeze(-1) if adv.dim() == 1 else adv
    nonzero_adv = valid & (adv != 0)  # [B, T]
    ppo0, cis0 = valid & (g_ppo == 0), valid & (g_cispo == 0)  # [B, T]
    return {
        "valid tokens": int(valid.sum()),
        "tokens with A != 0": int(nonzero_adv.sum()),
        "ppo clipped": int((valid & (clipped != 0)).sum()),
        "ppo zero grad": int(ppo0.sum()),
        "ppo zero grad, A != 0": int((ppo0 & nonzero_adv).sum()),
        "ppo zero, cispo nonzero": int((ppo0 & ~cis0).sum()),
        "cispo zero, ppo nonzero": int((cis0 & ~ppo0).sum()),
    }


def silenced_tokens(seed: int = 0, updates: int = 3, stress: dict | None = None) -> dict:
    """One batch of the tiny policy; ``updates`` PPO-clip updates move pi_theta away from pi_old
    (as inner updates 1..mu-1 do); then both losses' per-token gradients on the same log-probs
    (the mu-th update's) are compared by :func:`count_silenced`."""
    stress = {**STRESS, **(stress or {}), "num_iterations": updates + 1}
    tr = GRPOTrainer("tiny", task="addition", seed=seed, loss_type="grpo", max_steps=1, **stress)
    r = tr.prepare(tr.collect())  # old_logp: pi_old at sampling
    tr.model.train()
    for _ in range(updates):
        loss, _ = tr.loss(completion_logprobs(tr.model, r), r)
        tr.optimizer_step(loss)
    with torch.no_grad():
        logp = completion_logprobs(tr.model, r)  # [B, T] pi_theta after the updates
    g_ppo, g_cispo, clipped = token_grads(logp, r.old_logp, r.advantages, r.loss_mask)
    return count_silenced(g_ppo, g_cispo, clipped, r.advantages, r.loss_mask)


def verdict(results: dict) -> str:
    """Plain words with the numbers: is CISPO's silenced-token count > 0 with none the other
    way, and which arm has the smallest drawdown and the highest final reward?"""
    s, t = results["silenced"], summary(results)
    lines = [
        (
            "one batch after 3 PPO-clip updates: "
            f"{s['ppo zero grad, A != 0']} of "
            f"{s['tokens with A != 0']} tokens with A != 0 have zero PPO-clip gradient; CISPO "
            f"keeps a gradient on {s['ppo zero, cispo nonzero']} of them, and silences "
            f"{s['cispo zero, ppo nonzero']} tokens PPO-clip does not."
        )
    ]
    cispo_ok = s["ppo zero, cispo nonzero"] > 0 and s["cispo zero, ppo nonzero"] == 0
    lines.append(
        "CISPO keeps the gradient PPO-clip silences: REPRODUCED."
        if cispo_ok
        else "CISPO keeps the gradient PPO-clip silences: NOT REPRODUCED."
    )
    for name, row in t.iterrows():
        lines.append(
            f"{name}: reward {row['reward (last 1/4)']:.3f}, drawdown "
            f"{row['drawdown']:.3f}, ratio [{row['ratio/min']:.3g}, "
            f"{row['ratio/max']:.3g}], kl/old {row['kl/old']:.2e}, clip/region "
            f"{row['clip/region']:.3f}"
        )
    grpo = t.index[0]
    for arm in list(t.index)[1:]:
        what = f"{arm.split(' ')[0].upper()} more stable than GRPO"
        lines.append(compare_stability(t, grpo, arm, what))
    return "\n".join(lines)
