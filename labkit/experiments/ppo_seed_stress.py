"""Lab 79's stress section: the same four PPO arms at PPOTrainer's defaults as they are (lr 1e-3).

:mod:`labkit.experiments.ppo_seed` runs the arms at lr 3e-4, where plain PPO trains. At the
defaults' lr 1e-3 (2 epochs x 2 minibatches, so four optimizer steps a batch) the tiny policy's
reward dips early in every arm (lab 79's single-seed run before this experiment, in the
README's "not yet re-run" rows), so here the arms are compared as they crash: the same claims and rules
(:func:`~labkit.experiments.ppo_seed.claims`), tagged "stress". What the section teaches is
the setting, not the options: an entropy bonus, a clamp or a value clip does not rescue a
learning rate that is too large, and a difference between two crashed runs says little about
the option in a run that trains. Seed 004's "a healthy run's reward rises" is stated here too,
with the same rule: the stored run says whether these runs are healthy.

40 steps (the base's 100 would take the pair of stored runs past the budget; the dip is in
the first tenths of a run), 5 seeds x 4 arms
(``python scripts/run_experiment.py ppo_seed_stress --workers 2``).
"""

from __future__ import annotations

from labkit.experiments.harness import Experiment
from labkit.experiments.ppo_seed import ARMS, BASE, CLAMP, CURVES, STRESS_SETTING, claims, run

STRESS = "stress: PPOTrainer's defaults, lr 1e-3"


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed at ``STRESS_SETTING`` (defined here, so worker processes load this
    module's ``EXPERIMENT``)."""
    return run(
        STRESS_SETTING, settings, seed=seed, steps=steps, fast=fast, run_name=run_name, tick=tick
    )


EXPERIMENT = Experiment(
    name="ppo_seed_stress",
    lab="79_ppo_as_the_seed_writes_it",
    arms=ARMS,
    train=train,
    steps=40,
    fast_steps=4,
    curves=CURVES,
    claims=claims(STRESS, "PPOTrainer's defaults (lr 1e-3), where every arm's reward dips early"),
    live={"arms": [BASE, CLAMP], "seeds": (0, 1), "steps": 40},
)
