"""Clipping made visible: the clip fraction over mu inner updates and clip ranges epsilon.

PPO's clipped surrogate (Schulman et al. 2017, 1707.06347, eq. 7), as GRPO uses it
(DeepSeekMath 2402.03300, eq. 3; TRL ``GRPOTrainer._compute_loss``, quoted in seed 003):
    l_t = -min(rho_t A, clip(rho_t, 1 - eps, 1 + eps) A),   rho_t = pi_theta / pi_old.
A token is *clipped* when rho_t has left [1 - eps, 1 + eps] in the direction A pushes it: its
gradient is then 0. The batch is sampled by pi_old and reused for mu = ``num_iterations``
updates; the first update runs on pi_theta = pi_old, so rho = 1 there and nothing can clip.
With mu = 1 (DeepSeekMath's "one update per exploration stage") clipping never acts at all.

Each (mu, eps) is an arm of :data:`EXPERIMENT`, run on every seed with one budget; a run
records, per step, the clip fractions over all mu updates (``clip/region``) and at the last
update (``clip/region_last``), the largest ratio and the approximate KL(pi_old || pi_theta)
(``kl/old``), and is summarised by their means over its steps.

Departures, and why: the learning rate (1e-3, twice the base run's) is raised so that a few steps
move the policy far enough to clip on a 0.9 M-parameter model; the base run's 5e-4 clips too,
but less.
"""

from __future__ import annotations

import pandas as pd

from labkit.algos.config import BASE_RUN
from labkit.experiments.arms import grpo_run, tail_means
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, Outcome

CLAIM = (
    "PPO's clip (Schulman et al. 2017, arXiv 1707.06347) bounds how far one batch can move the "
    "policy: a token whose ratio pi_theta/pi_old has left [1 - eps, 1 + eps] in the direction its "
    "advantage pushes gets no gradient. GRPO (DeepSeekMath, arXiv 2402.03300) reuses each sampled "
    "batch for mu updates; the first runs at pi_theta = pi_old (ratio exactly 1), so nothing is "
    "clipped with mu = 1, and the clip fraction should rise with mu and fall as eps widens."
)
MUS = (1, 2, 4)
EPSILONS = (0.1, 0.2, 0.3)
LEARNING_RATE = 1e-3
"""Twice the base run's, so that a few steps move the tiny policy far enough to clip."""


def arm_name(mu: int, epsilon: float) -> str:
    """``"mu=2, eps=0.1"``."""
    return f"mu={mu}, eps={epsilon:g}"


ARMS = {arm_name(m, e): {"num_iterations": m, "epsilon": e} for m in MUS for e in EPSILONS}
CURVES = ("clip/region", "clip/region_last", "kl/old", "kl/old_last", "ratio/max", "reward/mean")
MEANS = (
    "clip/region",
    "clip/region_last",
    "clip/ratio_low_last",
    "clip/ratio_high_last",
    "kl/old_last",
)
"""Summarised by their mean over the run's steps."""
SOURCE = "PPO (Schulman et al. 2017, 1707.06347) eq. 7; GRPO (DeepSeekMath, 2402.03300) eq. 3"


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One (mu, eps) on one seed: the labs' base run at :data:`LEARNING_RATE`, with per-token
    diagnostics of 8 completions a step (the lab's clipped-token view)."""
    fixed = {k: v for k, v in BASE_RUN.items() if k != "max_steps"}
    fixed |= {"learning_rate": LEARNING_RATE, "diagnostics": 8}
    trainer = grpo_run(
        "tiny", settings, seed=seed, steps=steps, run_name=run_name, tick=tick, **fixed
    )
    return Outcome(summary(trainer.log.metrics), trainer.log.metrics)


def summary(m: pd.DataFrame) -> dict:
    """The clip fractions' and kl/old's means over the steps, the steps that clipped, the
    largest ratio, and the reward of the last 10 % of steps."""
    return {
        **{c: float(m[c].mean()) for c in MEANS},
        "steps clipping": int((m["clip/region"] > 0).sum()),
        "ratio/max": float(m["ratio/max"].max()),
        **tail_means(m, ["reward/mean"]),
    }


def sweep_table(summaries: pd.DataFrame) -> pd.DataFrame:
    """Per arm, mu, eps and each summary column's mean over seeds (the heatmap's table)."""
    cols = [c for c in summaries.columns if c not in ("arm", "seed")]
    t = summaries.groupby("arm", sort=False)[cols].mean().reset_index()
    t.insert(1, "mu", t["arm"].map(lambda a: ARMS[a]["num_iterations"]))
    t.insert(2, "epsilon", t["arm"].map(lambda a: ARMS[a]["epsilon"]))
    return t


def most_clipped(log) -> tuple[int, int]:
    """(step, sample) of the recorded completion with the most clipped tokens."""
    t = log.tokens
    n = t["clipped"].map(lambda c: sum(v or 0 for v in c))
    best = t.loc[n.idxmax()]
    return int(best["step"]), int(best["sample"])


def _rises(eps: float) -> Claim:
    return Claim(
        f"rises-with-mu-{eps:g}",
        f"the clip fraction rises with mu (mu = 4 against mu = 2, eps = {eps:g})",
        SOURCE,
        metric="clip/region",
        arm=arm_name(4, eps),
        baseline=arm_name(2, eps),
    )


def _falls(mu: int) -> Claim:
    return Claim(
        f"falls-with-eps-{mu}",
        f"the clip fraction falls as eps widens (eps = 0.3 against 0.1, mu = {mu})",
        SOURCE,
        metric="clip/region",
        arm=arm_name(mu, 0.3),
        baseline=arm_name(mu, 0.1),
        direction=-1,
    )


EXPERIMENT = Experiment(
    name="clipping",
    lab="73_clipping",
    arms=ARMS,
    train=train,
    steps=60,
    curves=CURVES,
    claims=(
        Claim(
            "mu1-no-clip",
            "with mu = 1 nothing is clipped: the only update runs at pi_theta = pi_old",
            SOURCE,
            metric="clip/region",
            arm=arm_name(1, 0.2),
            direction=0,
            margin=1e-9,
        ),
        Claim(
            "mu1-eps-irrelevant",
            "with mu = 1 the clip range changes nothing: eps = 0.1 and 0.3 train the same run",
            SOURCE,
            metric="reward/mean (last 10%)",
            arm=arm_name(1, 0.3),
            baseline=arm_name(1, 0.1),
            direction=0,
            margin=1e-9,
        ),
        *(_rises(e) for e in EPSILONS),
        *(_falls(m) for m in MUS if m > 1),
    ),
    live={
        "arms": [arm_name(1, 0.2), arm_name(4, 0.1), arm_name(4, 0.3)],
        "seeds": (0, 1),
        "steps": 40,
    },
)
