"""PG -> TRPO -> PPO-clip -> PPO's adaptive KL penalty, on a tabular gridworld, then on the tiny
language model: does each update rule do what its paper says about the step it takes?

Every arm measures the same thing after each update: d = KL_bar, the exact mean over the batch's
states (tokens) of KL(pi_old(.|s) || pi_theta(.|s)), the quantity TRPO bounds by delta, PPO's
KL penalty steers toward d_targ, and plain PG and PPO-clip leave free.

    gridworld  ``labkit.classic.trpo``: the 5x5 gridworld with a pit, slip 0.2, a step cost of
               0.02, T = 30, 16 episodes a batch, a GAE critic; J is the exact T-step return.
    tiny LM    ``labkit.algos.trpo.TRPOTrainer``: the tiny policy on 2-digit addition,
               ``digit_partial`` reward, 16 prompts x G = 4, GRPO's group advantages, lr 5e-4.

Settings chosen before the run, on other seeds: the gridworld's PG step eta = 8 (the best mean
J over 60 updates among 1, 2, 4, 8, 16 on seeds 100-102; 16 collapsed one seed), Adam lr 0.1
for both PPOs (of 0.03, 0.1, 0.3); delta = d_targ = 0.01 (the PPO paper's d_targ, TRPO's usual delta), K = mu = 10
epochs on the gridworld and 4 on the LM, beta_0 = 1. The LM arms keep BASE_RUN's learning rate.
The fixed-beta arm is the control of the adaptive-KL claim: the same penalty, beta kept at 1.

Departures, and why: one experiment holds both tasks (the lab reads them side by side), so an
arm name carries its task; a step is one update (an iteration of the tabular task, one batch of
the LM). TRPO's own KL is measured on the batch its line search checked, so its side of the
constraint claim holds by construction: the claim is about PG's side.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from labkit.classic.envs import gridworld
from labkit.classic.trpo import TrustRegionConfig, train_trust_region
from labkit.experiments.arms import grpo_run, heldout_accuracy
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, Outcome
from labkit.runs.log import RunLog, runs_root

CLAIM = (
    "TRPO (Schulman et al. 2015, arXiv 1502.05477) bounds each update's KL(pi_old || pi_theta) "
    "by delta with a natural-gradient step and a line search, so no single update collapses "
    "the policy as a plain policy-gradient step can (seeds 002, 004); PPO (Schulman et al. "
    "2017, arXiv 1707.06347) gets the same with first-order updates, by clipping the ratio or "
    "by a KL penalty whose beta adapts to keep the KL near d_targ, and clipping does best."
)
DELTA = 0.01
"""TRPO's delta and PPO's d_targ, on both tasks."""
GRID = {"slip": 0.2, "step_reward": -0.02}
LM = {
    "reward_funcs": ["digit_partial"],
    "num_generations": 4,
    "prompts_per_step": 16,
    "learning_rate": 5e-4,
    "beta": 0.0,
    "delta": DELTA,
    "d_targ": DELTA,
}
HELDOUT = {"full": 200, "fast": 16}
"""Held-out prompts of the LM arms' accuracy (one sample each, temperature 1)."""

G, L = " (gridworld)", " (tiny LM)"
ARMS = {
    "PG" + G: {"method": "pg", "learning_rate": 8.0},
    "TRPO" + G: {"method": "trpo", "delta": DELTA},
    "PPO-clip" + G: {"method": "ppo_clip", "learning_rate": 0.1},
    "PPO-KL adaptive" + G: {"method": "ppo_kl", "learning_rate": 0.1, "d_targ": DELTA},
    "PPO-KL fixed beta" + G: {"method": "ppo_kl", "learning_rate": 0.1, "kl_controller": "fixed"},
    "PG" + L: {"lm": True, "method": "clip", "num_iterations": 1},
    "TRPO" + L: {"lm": True, "method": "trpo", "num_iterations": 1},
    "PPO-clip" + L: {"lm": True, "method": "clip", "num_iterations": 4},
    "PPO-KL adaptive" + L: {"lm": True, "method": "kl_penalty", "num_iterations": 4},
    "PPO-KL fixed beta" + L: {
        "lm": True,
        "method": "kl_penalty",
        "num_iterations": 4,
        "kl_controller": "fixed",
    },
}


def kl_summary(d: pd.Series) -> dict:
    """The claims' KL columns from d per update: the fraction over delta, its median, and the
    median |ln(d / d_targ)| (how many e-folds from the target; d = 0 counts as 1e-12).

    >>> kl_summary(pd.Series([0.005, 0.01, 0.04]))["updates with KL > delta (frac)"]
    0.3333333333333333
    """
    d = d.astype(float)
    return {
        "updates with KL > delta (frac)": float((d > DELTA).mean()),
        "KL per update (median)": float(d.median()),
        "|ln(d/d_targ)| (median)": float(np.abs(np.log(d.clip(lower=1e-12) / DELTA)).median()),
    }


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed: the gridworld's ``labkit.classic.trpo`` or the LM's
    :class:`~labkit.algos.trpo.TRPOTrainer`."""
    settings = dict(settings)
    if settings.pop("lm", False):
        return train_lm(settings, seed=seed, steps=steps, fast=fast, run_name=run_name, tick=tick)
    return train_grid(settings, seed=seed, steps=steps, run_name=run_name, tick=tick)


def train_grid(settings: dict, *, seed: int, steps: int, run_name: str, tick) -> Outcome:
    """``steps`` updates of the tabular policy; each logged to ``runs/<run_name>`` as it goes
    (the live figure reads it)."""
    epochs = {"epochs": 10} if settings["method"].startswith("ppo") else {}
    cfg = TrustRegionConfig(iterations=steps, seed=seed, **epochs, **settings)
    log = RunLog(runs_root() / run_name, {"task": "gridworld", **GRID, **vars(cfg)})

    def record(it: int, rec: dict) -> None:
        row = {"step": it, "kl/update": rec["kl"], "J": rec["J"], "beta_old": rec["beta"]}
        log.log_step({**row, "return": rec["return"], "passes": rec["passes"]})
        tick(it, steps)

    try:
        _, recs = train_trust_region(gridworld(**GRID), cfg, callback=record)
    finally:
        log.close()
    r = pd.DataFrame(recs)
    drops = r["J_before"] - r["J"]
    summary = {
        **kl_summary(r["kl"]),
        "J (last 10%)": float(r["J"].iloc[-max(1, len(r) // 10) :].mean()),
        "largest drop in J": float(drops.max()),
        "updates that lower J (frac)": float((drops > 1e-9).mean()),
        "backward passes per update": float(r["passes"].mean()),
    }
    return Outcome(summary, log.metrics)


def train_lm(settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """``steps`` steps of :class:`~labkit.algos.trpo.TRPOTrainer` (resumable)."""
    from labkit.algos.trpo import TRPOTrainer  # the LM stack only where an LM arm runs

    trainer = grpo_run(
        "tiny",
        settings,
        seed=seed,
        steps=steps,
        run_name=run_name,
        tick=tick,
        trainer_cls=TRPOTrainer,
        save_steps=max(1, steps // 2),
        **LM,
    )
    m = trainer.log.metrics
    n = HELDOUT["fast" if fast else "full"]
    summary = {
        **kl_summary(m["kl/update"]),
        "held-out accuracy": heldout_accuracy(trainer, n, seed=seed),
        "seconds per step": float(m["time/step"].median()),
    }
    return Outcome(summary, m)


TRPO, PPO = "TRPO (Schulman et al. 2015, 1502.05477)", "PPO (Schulman et al. 2017, 1707.06347)"


def task_claims(task: str, suffix: str, ret: str) -> list[Claim]:
    """The four claims both tasks test; ``ret`` is the task's return column."""
    return [
        Claim(
            f"trpo-kl-{suffix}",
            f"TRPO's updates respect the KL constraint where plain PG's exceed it{task}",
            f"{TRPO} sec. 6; seed 004",
            metric="updates with KL > delta (frac)",
            arm="TRPO" + task,
            baseline="PG" + task,
            direction=-1,
            note="TRPO's line search checks the same batch: its side is 0 by construction.",
        ),
        Claim(
            f"adaptive-kl-{suffix}",
            f"adaptive beta keeps the measured KL near d_targ{task}",
            f"{PPO} sec. 4; seed 002",
            metric="|ln(d/d_targ)| (median)",
            arm="PPO-KL adaptive" + task,
            baseline="PPO-KL fixed beta" + task,
            direction=-1,
        ),
        Claim(
            f"clip-vs-trpo-{suffix}",
            f"PPO-clip does better than TRPO{task}",
            f"{PPO} sec. 6.2, fig. 3",
            metric=ret,
            arm="PPO-clip" + task,
            baseline="TRPO" + task,
        ),
        Claim(
            f"clip-vs-kl-{suffix}",
            f"clipping does better than the adaptive KL penalty{task}",
            f"{PPO} table 1",
            metric=ret,
            arm="PPO-clip" + task,
            baseline="PPO-KL adaptive" + task,
        ),
    ]


COLLAPSE = [
    Claim(
        "trpo-collapse-grid",
        "one PG update can collapse the policy; TRPO's worst drop in the true return is "
        "smaller (gridworld)",
        f"seed 004; {TRPO} sec. 3",
        metric="largest drop in J",
        arm="TRPO" + G,
        baseline="PG" + G,
        direction=-1,
    ),
    Claim(
        "trpo-monotonic-grid",
        "TRPO lowers the true return in fewer updates than PG (gridworld)",
        f"{TRPO} sec. 3 (monotonic improvement)",
        metric="updates that lower J (frac)",
        arm="TRPO" + G,
        baseline="PG" + G,
        direction=-1,
        note="the guarantee holds for exact advantages; here they are sampled",
    ),
]
CLAIMS = (
    *task_claims(G, "grid", "J (last 10%)")[:1],
    *COLLAPSE,
    *task_claims(G, "grid", "J (last 10%)")[1:],
    *task_claims(L, "lm", "held-out accuracy"),
)

EXPERIMENT = Experiment(
    name="trpo",
    lab="33_trpo_and_adaptive_kl",
    arms=ARMS,
    train=train,
    steps=40,
    claims=CLAIMS,
    curves=("kl/update", "J", "beta_old", "reward/mean", "return"),
    live={"arms": [a for a in ARMS if a.endswith(G)], "seeds": (0, 1), "steps": 40},
)
