"""PPO as the seed material writes it: policy + value + entropy, alpaca_farm's clamped KL,
value clipping on and off.

The seed's PPO (002: "total loss = policy + value function + entropy regulariser"; 004 walks
through alpaca_farm's ``ppo_trainer.py``):
    L = L_clip(theta) + c_vf * 1/2 max((V - R)^2, (V_clip - R)^2) - c_H * H_bar,
    r_t = -beta * max(log pi_old(y_t) - log pi_ref(y_t), 0)  (+ r(x, y) on the last token),
the max(., 0) being alpaca_farm's ``kl = torch.clamp(logprobs - ref_logprobs, min=0.0)``
(seed 004, ``_shape_reward``). Four arms from PPOTrainer's defaults (16 x 4, beta 0.05 k1 in the
reward, c_vf 0.1, eps_v 0.2, 2 epochs x 2 minibatches), one change each:
``entropy_coef`` = 0.05, ``kl_clamp_min`` = 0.0, ``cliprange_value`` = None; every arm on the
same seeds (``EXPERIMENT``), each claim a paired difference over them.

Departures, and why:
- ``kl/k1`` is logged from the first minibatch of each step (pi_theta against pi_ref, before
  the clamp); the clamp's effect is read off the reward's KL term, ``kl penalty`` =
  mean over tokens of beta * KL_t as the reward used it (from the token rows).
- PPOTrainer's defaults (lr 1e-3) are a stress setting on the tiny policy: every arm's reward
  dips early and recovers slowly, so the arms are compared partly on how they crash.
"""

from __future__ import annotations

import pandas as pd

from labkit.algos.ppo import PPOTrainer
from labkit.experiments.arms import heldout_accuracy, tail_means
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, Outcome, resume_or_start

CLAIM = (
    "PPO for language models as the seed material writes it (seed 002, seed 004 on alpaca_farm's "
    "ppo_trainer.py; Schulman et al. 2017, arXiv 1707.06347, eq. 9; Ouyang et al. 2022, arXiv "
    "2203.02155): an entropy bonus keeps the policy's entropy higher; clamping the per-token "
    "KL at 0 makes the reward's KL penalty larger (never a bonus for tokens pi_ref prefers) "
    "and so keeps pi_theta closer to pi_ref; value clipping limits how far the critic moves "
    "per update (Engstrom et al. 2020, arXiv 2005.12729, find it does not help)."
)
BASE = "PPO (policy + value)"
ARMS = {
    BASE: {},
    "+ entropy bonus c_H 0.05": {"entropy_coef": 0.05},
    "KL clamped at 0 (alpaca_farm)": {"kl_clamp_min": 0.0},
    "no value clipping": {"cliprange_value": None},
}
HELDOUT = {"full": 300, "fast": 32}
"""Held-out prompts per run: one sample each at tau = 1 (s.e. <= 0.029 at 300)."""
TAIL = ("entropy", "reward/mean", "kl/k1", "kl/k3")
RUN_MEANS = ("vf/explained_var", "vf/clipfrac")
"""The critic's metrics, averaged over the whole run (every minibatch update)."""


def kl_penalty(tokens: pd.DataFrame, rows: int) -> float:
    """Mean beta * KL_t the reward carried, over the last ``rows`` recorded completions:
    r_t = -beta KL_t on every token but the last, which also holds r(x, y).

    >>> round(kl_penalty(pd.DataFrame({"reward": [[-0.1, -0.3, 1.0], [-0.2, 0.5]]}), 2), 6)
    0.2
    """
    pen = [-x for rw in tokens["reward"].iloc[-rows:] for x in rw[:-1]]
    return sum(pen) / max(1, len(pen))


def summary(trainer, n_eval: int, seed: int) -> dict:
    """Entropy over the first and last 10 % of steps, the last 10 %'s reward, KL to pi_ref and
    the reward's KL penalty, the critic's explained variance and clip fraction over the run,
    held-out accuracy."""
    m = trainer.log.metrics
    n = max(1, round(len(m) * 0.1))
    out = {"entropy (first 10%)": float(m["entropy"].iloc[:n].mean()), **tail_means(m, TAIL)}
    out["kl penalty (last 10%)"] = kl_penalty(trainer.log.tokens, n * trainer.config.diagnostics)
    out.update({f"{k} (run)": float(m[k].mean()) for k in RUN_MEANS})
    out["held-out accuracy"] = heldout_accuracy(trainer, n_eval, seed=seed)
    return out


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed: ``PPOTrainer``'s defaults with the arm's one change, KL to pi_ref
    tracked."""
    trainer = resume_or_start(
        PPOTrainer,
        run_name,
        steps,
        tick,
        model="tiny",
        seed=seed,
        max_steps=steps,
        track_kl=True,
        save_steps=max(1, steps // 3),
        **settings,
    )
    return Outcome(summary(trainer, HELDOUT["fast" if fast else "full"], seed), trainer.log.metrics)


SOURCE = "seed 004 (alpaca_farm ppo_trainer.py, _shape_reward)"
STRESS = "PPOTrainer's defaults (lr 1e-3, 2 epochs x 2 minibatches) make every arm dip early"

EXPERIMENT = Experiment(
    name="ppo_seed",
    lab="79_ppo_as_the_seed_writes_it",
    arms=ARMS,
    train=train,
    steps=100,
    fast_steps=4,
    curves=("entropy", "reward/mean", "kl/k3", "vf/explained_var", "vf/clipfrac"),
    claims=(
        Claim(
            "entropy-bonus",
            "an entropy bonus (c_H 0.05) keeps PPO's entropy higher",
            "PPO (Schulman et al. 2017, 1707.06347) eq. 9; seed 002",
            metric="entropy (last 10%)",
            arm="+ entropy bonus c_H 0.05",
            baseline=BASE,
            note=STRESS,
        ),
        Claim(
            "clamp-penalty",
            "clamping the per-token KL at 0 makes the reward's KL penalty larger",
            SOURCE,
            metric="kl penalty (last 10%)",
            arm="KL clamped at 0 (alpaca_farm)",
            baseline=BASE,
            note=f"{STRESS}; on one rollout the clamp can only raise it (a unit test)",
        ),
        Claim(
            "clamp-closer",
            "clamping the per-token KL at 0 keeps pi_theta closer to pi_ref",
            SOURCE,
            metric="kl/k3 (last 10%)",
            arm="KL clamped at 0 (alpaca_farm)",
            baseline=BASE,
            direction=-1,
            note=STRESS,
        ),
        Claim(
            "value-clip",
            "value clipping does not help: held-out accuracy the same with and without",
            "Engstrom et al. 2020 (2005.12729), the code-level optimisations",
            metric="held-out accuracy",
            arm=BASE,
            baseline="no value clipping",
            direction=0,
            margin=0.05,
            note=f"{STRESS}; the value clip binds on few tokens (vf/clipfrac)",
        ),
    ),
    live={"arms": [BASE, "KL clamped at 0 (alpaca_farm)"], "seeds": (0, 1), "steps": 100},
)
