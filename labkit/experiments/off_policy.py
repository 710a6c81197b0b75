"""GSPO and CISPO against GRPO's token-level PPO-clip under off-policy stress (lab 80's stress
section; :mod:`labkit.experiments.off_policy_base` runs the same arms and claims at the labs'
base GRPO run, where plain GRPO trains, and opens the lab).

Three objectives on the same seeds, budget and stress (mu = 4 inner updates on each batch, a
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
It is the fourth arm, ``PROBE``: the seed varies the batch and the policy's updates.

Every arm runs on the same seeds (``EXPERIMENT``); each claim is a paired difference over them.
Departures: reward stability is read from the training batches' reward (no held-out set), over
a short run; "drawdown" is the largest fall of the 10-step moving mean below its running peak.
``STRESS`` is strong enough that every objective's reward falls: the arms are compared partly
on how they crash (the claims' notes; their "left to a later set-up" is ``off_policy_base``,
the stored result's claims are kept as they ran). Answers of 2-4 tokens leave GSPO's length argument (token
ratio noise growing with length) little room.
"""

from __future__ import annotations

import math

import pandas as pd
import torch

from labkit.algos.grpo import GRPOTrainer
from labkit.core import policy_loss
from labkit.experiments.arms import addition_run
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, Outcome
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
OBJECTIVES = {
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
GRPO, GSPO, CISPO = OBJECTIVES
STRESS = {
    "num_iterations": 4,
    "learning_rate": 1e-3,
    "lr_scheduler_type": "constant",
    "num_generations": 4,
    "prompts_per_step": 32,
    "beta": 0.0,
}
"""Off-policy stress: mu = 4 updates per batch at 2x the demo's learning rate (5e-4)."""
PROBE = "probe: tokens PPO-clip silences"
"""The arm that counts, on one batch of its seed, the tokens PPO-clip silences and CISPO keeps."""
ARMS = {**OBJECTIVES, PROBE: {"updates": 3}}
CURVES = ("reward/mean", "accuracy", "ratio/max", "ratio/min", "kl/old", "clip/region")


def stability(metrics: pd.DataFrame, window: int = 10) -> dict:
    """Reward stability of one run's metrics: final reward (mean of the last quarter) and its
    gain over the first 5 steps, the largest drawdown of the ``window``-step moving mean below
    its running peak, the std of the step-to-step reward change, and the ratio spread and
    clipping over the run.

    >>> m = pd.DataFrame({"reward/mean": [0., 1., 0., 1.], "ratio/max": 1.5, "ratio/min": .5,
    ...                   "kl/old": .01, "clip/region": .1, "accuracy": .5})
    >>> stability(m, window=1)["drawdown"]
    1.0
    """
    r = metrics["reward/mean"]
    ma = r.rolling(window, min_periods=1).mean()
    q = max(1, len(r) // 4)
    first, last = r.iloc[:5].mean(), r.iloc[-q:].mean()
    return {
        "reward (first 5)": first,
        "reward (last 1/4)": last,
        "reward gain": last - first,
        "accuracy (last 1/4)": metrics["accuracy"].iloc[-q:].mean(),
        "drawdown": float((ma.cummax() - ma).max()),
        "reward step std": float(r.diff().std()) if len(r) > 2 else float("nan"),
        "ratio/max": metrics["ratio/max"].max(),
        "log10 ratio/max": math.log10(metrics["ratio/max"].max()),
        "ratio/min": metrics["ratio/min"].min(),
        "kl/old": metrics["kl/old"].mean(),
        "clip/region": metrics["clip/region"].mean(),
    }


def token_grads(logp, old_logp, adv, mask, epsilon: float = 0.2, cispo_cap: float = 5.0):
    """Per-token d loss / d log pi_theta [B, T] of PPO-clip (``grpo``) and CISPO on the same
    log-probs, and PPO-clip's per-token ``clipped`` flag: (g_ppo, g_cispo, clipped)."""
    lp = logp.detach().clone().requires_grad_()  # [B, T]
    loss, st = policy_loss(lp, old_logp, adv, mask, loss_type="grpo", epsilon=epsilon)
    (g_ppo,) = torch.autograd.grad(loss, lp)  # [B, T]
    loss, _ = policy_loss(lp, old_logp, adv, mask, loss_type="cispo", epsilon_high=cispo_cap)
    (g_cispo,) = torch.autograd.grad(loss, lp)  # [B, T]
    return g_ppo, g_cispo, st["per_token"]["clipped"]


COUNTS = (
    "valid tokens",
    "tokens with A != 0",
    "ppo clipped",
    "ppo zero grad",
    "ppo zero grad, A != 0",
    "ppo zero, cispo nonzero",
    "cispo zero, ppo nonzero",
)
"""The keys of :func:`count_silenced`, in order."""


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


def silenced_summary(counts: dict) -> dict:
    """:func:`count_silenced`'s counts, and the two disagreements as shares of the tokens with
    A != 0 (the probe arm's summary).

    >>> s = silenced_summary({"tokens with A != 0": 8, "ppo zero, cispo nonzero": 2,
    ...                       "cispo zero, ppo nonzero": 0})
    >>> s["kept by CISPO only (share of A != 0)"], s["kept by PPO-clip only (share of A != 0)"]
    (0.25, 0.0)
    """
    n = max(1, counts["tokens with A != 0"])
    return {
        **counts,
        "kept by CISPO only (share of A != 0)": counts["ppo zero, cispo nonzero"] / n,
        "kept by PPO-clip only (share of A != 0)": counts["cispo zero, ppo nonzero"] / n,
    }


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed under ``STRESS``: :func:`train_at`."""
    return train_at(
        STRESS, arm, settings, seed=seed, steps=steps, fast=fast, run_name=run_name, tick=tick
    )


def train_at(setting: dict, arm: str, settings: dict, *, seed, steps, fast, run_name, tick):
    """One arm on one seed: an objective trained ``steps`` steps at ``setting`` (summarised by
    :func:`stability`), or the probe (:func:`silenced_tokens` on the seed's first batch, its
    updates at ``setting``'s learning rate)."""
    if arm == PROBE:
        counts = silenced_tokens(seed=seed, updates=settings["updates"], stress=setting)
        tick(steps, steps)
        return Outcome(silenced_summary(counts), pd.DataFrame({"step": pd.Series(dtype="int64")}))
    trainer = setting_run(setting, settings, seed=seed, steps=steps, run_name=run_name, tick=tick)
    return Outcome(stability(trainer.log.metrics), trainer.log.metrics)


def setting_run(setting: dict, settings: dict, *, seed, steps, run_name, tick, **overrides):
    """A resumable GRPO run of ``settings`` on 2-digit addition at ``setting`` (:data:`STRESS`
    or ``off_policy_base.BASE_SETTING``, with ``overrides`` on top), checkpointed three times:
    the runs of this lab and of lab 81."""
    return addition_run(
        settings, seed=seed, steps=steps, run_name=run_name, tick=tick, **(setting | overrides)
    )


GSPO_SOURCE = "Zheng et al. 2025, GSPO (2507.18071)"
CISPO_SOURCE = "MiniMax-M1 (2506.13585) sec. 3.1"
CRASH = (
    "STRESS (mu = 4 at lr 1e-3, constant) makes every objective's reward fall: the arms are "
    "compared partly on how they crash; a setting where the baseline trains is left to a "
    "later set-up"
)
SHORT = f"{CRASH}; answers of 2-4 tokens leave the length argument little room"


def _versus_grpo(key, text, source, *, arm, metric, direction, note) -> Claim:
    """A claim that ``arm`` beats the GRPO objective on ``metric`` in ``direction``."""
    return Claim(
        key, text, source, metric=metric, arm=arm, baseline=GRPO, direction=direction, note=note
    )


PROBE_NOTE = "one batch per seed, the 4th of mu = 4 updates (3 PPO-clip updates first)"


def claims(
    tag: str = "", crash: str = CRASH, short: str = SHORT, probe: str = PROBE_NOTE
) -> tuple[Claim, ...]:
    """The claims and their rules, the same at every setting: ``tag`` is added to each claim's
    text (the stress experiment's have none), ``crash`` and ``short`` are the notes of the
    stability claims (CISPO's and GSPO's), ``probe`` the token count's."""
    return (
        Claim(
            "cispo-keeps",
            f"CISPO keeps a gradient on the tokens PPO-clip silences{tag}",
            CISPO_SOURCE,
            metric="kept by CISPO only (share of A != 0)",
            arm=PROBE,
            note=probe,
        ),
        _versus_grpo(
            "gspo-spread",
            f"GSPO's sequence ratio spreads less than GRPO's token ratio (log10 max ratio){tag}",
            f"{GSPO_SOURCE} sec. 3",
            arm=GSPO,
            metric="log10 ratio/max",
            direction=-1,
            note=short,
        ),
        _versus_grpo(
            "gspo-reward",
            f"GSPO trains more stably than GRPO off-policy: higher final reward{tag}",
            f"{GSPO_SOURCE} sec. 5.1",
            arm=GSPO,
            metric="reward (last 1/4)",
            direction=1,
            note=short,
        ),
        _versus_grpo(
            "gspo-drawdown",
            f"GSPO trains more stably than GRPO off-policy: smaller reward drawdown{tag}",
            f"{GSPO_SOURCE} sec. 5.1",
            arm=GSPO,
            metric="drawdown",
            direction=-1,
            note=short,
        ),
        _versus_grpo(
            "cispo-reward",
            f"CISPO trains more stably than PPO-clip: higher final reward{tag}",
            CISPO_SOURCE,
            arm=CISPO,
            metric="reward (last 1/4)",
            direction=1,
            note=crash,
        ),
        _versus_grpo(
            "cispo-drawdown",
            f"CISPO trains more stably than PPO-clip: smaller reward drawdown{tag}",
            CISPO_SOURCE,
            arm=CISPO,
            metric="drawdown",
            direction=-1,
            note=crash,
        ),
    )


EXPERIMENT = Experiment(
    name="off_policy",
    lab="80_gspo_cispo_off_policy",
    arms=ARMS,
    train=train,
    steps=60,
    fast_steps=4,
    curves=CURVES,
    claims=claims(),
    live={"arms": [*OBJECTIVES, PROBE], "seeds": (0, 1), "steps": 60},
)
