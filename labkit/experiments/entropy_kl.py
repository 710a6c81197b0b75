"""Entropy and KL on the tiny policy: what holds entropy up, what beta buys, where KL goes.

(a) Entropy collapse. GRPO sharpens the policy: the mean per-token entropy
    H_bar = sum_t m_t H(pi(. | y_<t)) / sum_t m_t (metric ``entropy``) falls over a run. Three
    knobs claimed to hold it: clip-higher, eps_high = 0.28 > eps_low = 0.2 (DAPO, 2503.14476,
    sec. 3.1: the upper clip caps how far a low-probability token can rise); an entropy bonus,
    L - c_H H_bar (``entropy_coef``; PPO 1707.06347 eq. 9); a hotter sampling temperature.
(b) The reward-vs-KL frontier: beta in the loss (k3, DeepSeekMath 2402.03300 eq. 3), swept;
    final reward and held-out accuracy against the final KL(pi_theta || pi_ref) (``kl/k3``).
(c) Where KL goes (seed 002: "KL in reward (k1): conservative; KL in loss (k3/k2): efficient
    exploration"), on PPO with a critic: r_t -= beta k1_t (InstructGPT 2203.02155) against
    beta k3 in the loss (GRPO's), same beta, and beta = 0 for reference.

Every arm runs on the same seeds (``EXPERIMENT``); each claim is a paired difference over them.

Departures, and why:
- ``entropy`` is the trainer's, from the logits of the FIRST inner update of each step, at the
  run's temperature tau: the tau = 1.2 arm reports the entropy of its tempered distribution.
- Held-out accuracy is sampled at tau = 1 for every arm (the same yardstick).
- GRPO runs the labs' base configuration made more off-policy, ``DRIFT``: mu = 4 updates per batch
  at lr 1e-3. With mu = 1 the ratio is 1 and nothing is clipped; at the base run's mu = 2, lr 5e-4
  the upper clip binds on few tokens, mostly early (``entropy_kl_base``'s pilot), so
  clip-higher has little to act on; at mu = 4, lr 1e-3 it binds more
  (``clip/ratio_high``), closer to where DAPO used it. It is a stress setting: runs dip early
  and some collapse, so the arms are compared partly on how they crash (the claims' notes).
  Lab 78's base section, :mod:`labkit.experiments.entropy_kl_base`, runs the GRPO arms and
  claims at the base run's setting, where plain GRPO trains.
"""

from __future__ import annotations

import pandas as pd

from labkit.algos.config import BASE_RUN
from labkit.algos.ppo import PPOTrainer
from labkit.experiments.arms import grpo_run, heldout_accuracy, tail_means
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, Outcome, resume_or_start

CLAIM = (
    "RL on language models collapses the policy's entropy, and clip-higher (DAPO, Yu et al. "
    "2025, arXiv 2503.14476: eps_high = 0.28 keeps entropy up) or an entropy bonus (PPO, "
    "Schulman et al. 2017, arXiv 1707.06347, eq. 9) holds it. A KL penalty to pi_ref trades "
    "reward for closeness: the larger beta, the smaller the final KL and the lower the reward "
    "(DeepSeekMath 2402.03300 puts beta k3 in the loss; InstructGPT 2203.02155 puts beta k1 in "
    "the reward). Seed 002: KL in the reward is the conservative choice, in the loss the "
    "exploring one."
)
DRIFT = {k: v for k, v in BASE_RUN.items() if k != "max_steps"} | {
    "num_iterations": 4,
    "learning_rate": 1e-3,
}
"""The GRPO configuration of every GRPO arm: the base run's, mu = 4 at lr 1e-3 (see the header)."""
BASE = "GRPO, eps 0.2"
ENTROPY_ARMS = {
    BASE: {},
    "clip-higher, eps_high 0.28": {"epsilon_high": 0.28},
    "entropy bonus, c_H 0.05": {"entropy_coef": 0.05},
    "temperature 1.2": {"temperature": 1.2},
}
BETAS = {0.0: BASE, 0.01: "beta 0.01", 0.04: "beta 0.04", 0.1: "beta 0.1", 0.3: "beta 0.3"}
"""beta -> its arm (beta 0 is the plain GRPO arm: ``DRIFT`` has beta = 0)."""
KL_ARMS = {
    "PPO, beta 0": {"beta": 0.0},
    "PPO, beta k1 in the reward": {"beta": 0.1, "kl_in_reward": True, "kl_estimator": "k1"},
    "PPO, beta k3 in the loss": {"beta": 0.1, "kl_in_reward": False, "kl_estimator": "k3"},
}
ARMS = {
    **ENTROPY_ARMS,
    **{arm: {"beta": b} for b, arm in BETAS.items() if b > 0},
    **KL_ARMS,
}
HELDOUT = {"full": 300, "fast": 32}
"""Held-out prompts per run: one sample each at tau = 1 (s.e. <= 0.029 at 300)."""
TAIL = ("entropy", "reward/mean", "accuracy", "kl/k1", "kl/k3")


def summary(trainer, n_eval: int, seed: int) -> dict:
    """Entropy over the first and last 10 % of steps and its change, the last 10 %'s reward,
    accuracy and KL to pi_ref, the run's mean upper-clip fraction, held-out accuracy."""
    m = trainer.log.metrics
    head = m.iloc[: max(1, round(len(m) * 0.1))]
    out = {"entropy (first 10%)": float(head["entropy"].mean()), **tail_means(m, TAIL)}
    out["entropy change"] = out["entropy (last 10%)"] - out["entropy (first 10%)"]
    out["clip/ratio_high (run)"] = (
        float(m["clip/ratio_high"].mean()) if "clip/ratio_high" in m else None
    )
    out["held-out accuracy"] = heldout_accuracy(trainer, n_eval, seed=seed)
    return out


def run(
    setting: dict,
    arm: str,
    settings: dict,
    *,
    seed: int,
    steps: int,
    fast: bool,
    run_name: str,
    tick,
):
    """One arm on one seed: a GRPO arm on ``setting`` (a GRPO configuration), or a PPO arm on
    ``PPOTrainer``'s defaults; KL to pi_ref tracked either way."""
    common = {"seed": seed, "max_steps": steps, "track_kl": True, "save_steps": max(1, steps // 3)}
    if arm in KL_ARMS:
        trainer = resume_or_start(
            PPOTrainer, run_name, steps, tick, model="tiny", **common, **settings
        )
    else:
        trainer = grpo_run(
            "tiny", settings, run_name=run_name, tick=tick, steps=steps, **common, **setting
        )
    return Outcome(summary(trainer, HELDOUT["fast" if fast else "full"], seed), trainer.log.metrics)


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed at ``DRIFT`` (PPO arms: ``PPOTrainer``'s defaults)."""
    return run(
        DRIFT, arm, settings, seed=seed, steps=steps, fast=fast, run_name=run_name, tick=tick
    )


def frontier(summaries: pd.DataFrame) -> pd.DataFrame:
    """The beta sweep's end points, one row per beta (means over seeds): what the frontier
    figure (``labkit.plots.entropy_kl.frontier_figure``) draws.

    >>> s = pd.DataFrame({"arm": [BASE, "beta 0.3"], "kl/k3 (last 10%)": [0.4, 0.2]})
    >>> frontier(s)[["beta", "kl/k3 (last 10%)"]].values.tolist()
    [[0.0, 0.4], [0.3, 0.2]]
    """
    arms = {arm: b for b, arm in BETAS.items()}
    s = summaries[summaries["arm"].isin(arms)]
    t = s.drop(columns="seed", errors="ignore").groupby("arm", sort=False).mean(numeric_only=True)
    t.insert(0, "beta", [arms[a] for a in t.index])
    return t.sort_values("beta")


STRESS_NOTE = (
    "DRIFT (mu = 4 at lr 1e-3) is a stress setting where runs dip early and some collapse: "
    "the arms are compared partly on how they crash; a setting where the baseline trains is "
    "left to a later set-up"
)
DAPO = "DAPO (Yu et al. 2025, 2503.14476)"
KL_SOURCE = "DeepSeekMath (2402.03300) eq. 3-4; InstructGPT (2203.02155)"
PLACEMENT = "seed 002; InstructGPT (2203.02155); DeepSeekMath (2402.03300)"


def _claim(key, text, source, *, metric, arm, baseline=BASE, direction=1, note=STRESS_NOTE):
    """A claim of this experiment: against plain GRPO unless told, with the stress note."""
    return Claim(
        key, text, source, metric=metric, arm=arm, baseline=baseline, direction=direction, note=note
    )


def grpo_claims(tag: str = "", note: str = STRESS_NOTE, clip_note: str = "") -> tuple[Claim, ...]:
    """The GRPO arms' claims and their rules, the same at every setting: ``tag`` is added to
    each claim's text (empty: none), ``note`` is each claim's note, ``clip_note`` is added to
    the clip-higher claims' note."""
    t = f" ({tag})" if tag else ""
    clip = f"{note}; {clip_note}" if clip_note else note
    return (
        _claim(
            "collapse",
            f"GRPO collapses the policy's entropy{t}",
            f"{DAPO} sec. 3.1, fig. 2",
            metric="entropy change",
            arm=BASE,
            baseline=None,
            direction=-1,
            note=note,
        ),
        _claim(
            "clip-higher-entropy",
            f"clip-higher (eps_high 0.28) keeps entropy higher{t}",
            f"{DAPO} sec. 3.1, fig. 2",
            metric="entropy (last 10%)",
            arm="clip-higher, eps_high 0.28",
            note=clip,
        ),
        _claim(
            "clip-higher-accuracy",
            f"clip-higher (eps_high 0.28) raises accuracy{t}",
            f"{DAPO} table 1",
            metric="held-out accuracy",
            arm="clip-higher, eps_high 0.28",
            note=clip,
        ),
        _claim(
            "entropy-bonus",
            f"an entropy bonus (c_H 0.05) keeps entropy higher{t}",
            "PPO (Schulman et al. 2017, 1707.06347) eq. 9; seed 002",
            metric="entropy (last 10%)",
            arm="entropy bonus, c_H 0.05",
            note=f"{note}; c_H 0.05 was not tuned for it and can overshoot to a near-uniform policy",
        ),
        _claim(
            "beta-closer-k3",
            f"a larger beta (0.3 vs 0) ends closer to pi_ref (k3){t}",
            KL_SOURCE,
            metric="kl/k3 (last 10%)",
            arm="beta 0.3",
            direction=-1,
            note=note,
        ),
        _claim(
            "beta-closer-k1",
            f"a larger beta (0.3 vs 0) ends closer to pi_ref (k1){t}",
            KL_SOURCE,
            metric="kl/k1 (last 10%)",
            arm="beta 0.3",
            direction=-1,
            note=note,
        ),
        _claim(
            "beta-costs-reward",
            f"a larger beta (0.3 vs 0) costs reward (the frontier){t}",
            KL_SOURCE,
            metric="reward/mean (last 10%)",
            arm="beta 0.3",
            direction=-1,
            note=note,
        ),
    )


EXPERIMENT = Experiment(
    name="entropy_kl",
    lab="78_entropy_and_kl",
    arms=ARMS,
    train=train,
    steps=60,
    fast_steps=4,
    curves=("entropy", "reward/mean", "accuracy", "kl/k1", "kl/k3", "clip/ratio_high"),
    claims=(
        *grpo_claims(),
        _claim(
            "placement-k3",
            "KL in the reward (k1) keeps PPO closer to pi_ref than KL in the loss (k3), by k3",
            PLACEMENT,
            metric="kl/k3 (last 10%)",
            arm="PPO, beta k1 in the reward",
            baseline="PPO, beta k3 in the loss",
            direction=-1,
            note="PPOTrainer's defaults (lr 1e-3, 2 epochs x 2 minibatches) dip early on this toy",
        ),
        _claim(
            "placement-k1",
            "KL in the reward (k1) keeps PPO closer to pi_ref than KL in the loss (k3), by k1",
            PLACEMENT,
            metric="kl/k1 (last 10%)",
            arm="PPO, beta k1 in the reward",
            baseline="PPO, beta k3 in the loss",
            direction=-1,
            note="PPOTrainer's defaults (lr 1e-3, 2 epochs x 2 minibatches) dip early on this toy",
        ),
    ),
    live={
        "arms": [BASE, "clip-higher, eps_high 0.28", "entropy bonus, c_H 0.05"],
        "seeds": (0, 1),
        "steps": 60,
    },
)
