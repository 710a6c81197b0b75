"""Lab 81 at its base setting: DeepSeek-V3.2's two off-policy tricks where plain GRPO trains.

:mod:`labkit.experiments.v32_tricks` (the lab's stress section) runs the four arms and the top-p
probe at lab 80's stress (mu = 4, lr 1e-3 constant), where every arm's reward falls, so its
claims compare crashes. Here the same arms and claims run at lab 80's base setting
(``off_policy_base.BASE_SETTING``: the labs' base GRPO run, 32 prompts x 4, beta 0, lr 5e-4,
mu = 2, linear decay), ``loss_type="grpo"``, 60 steps, 5 seeds. The claims' texts are tagged
"(base setting)", their rules are the stress experiment's; ``grpo-trains`` states the
precondition (plain GRPO's reward rises). The base setting was chosen once, for both labs, on
plain GRPO alone (``off_policy_base``'s docstring has that pilot: reward 0.372 -> 0.583 over
60 steps on seed 100); plain GRPO here is the same run as lab 80's GRPO arm.

Why the base setting lets the effects happen, and what would falsify them:
- Off-policy sequence masking: with mu = 2 the second update of each batch has
  pi_theta != pi_old, so a negative-advantage sequence's divergence
  (1/|o_i|) sum_t log(pi_old / pi_theta) can pass delta = 0.25 (in the choice pilot the plain
  arm's token ratios reached 0.001 at the low end). The mask is a guard against highly
  off-policy negatives: at a mild setting it may bind rarely (``masked frac`` in the summary),
  and where it masks almost nothing the two arms are nearly one run, so "inconclusive" then
  means the guard costs nothing here, not that it fails. A masked arm whose final reward is
  below plain GRPO's (interval below 0) falsifies "it stabilises training".
- Keep sampling mask: top-p 0.9 truncates the sampler whatever the learning rate (the probe
  measures the gap log mu - log pi at the cold start, on each seed's first batch); without the
  kept mask the trainer's pi_old and pi_theta are untruncated, with it both are the truncated
  mu. Falsified if the kept-mask arm's reward is below the plain top-p arm's, or its approx KL
  to pi_old is above it. The report's benefit, language consistency, has no counterpart in
  2-digit addition (the claims' notes).

Budget, from the timing pilot below, which looked at nothing but time: 5 seeds x 4 arms x 60
steps, and the probe. Timing pilot: seed 100, the kept-mask arm (the costliest: the top-p
mask [B, T, V] is built and applied at every forward), 3 steps at one thread, load average ~7
on the 2 cores from other jobs: 0.51, 0.44, 0.51 s a step against plain GRPO's 0.29 (lab 80's
pilot), the probe 0.2 s a seed; with plain GRPO's 60-step figure from the choice pilot (0.49 s
a step, ~10 s of start-up and checkpoints) scaled by that ratio: 5 x (2 x (60 x 0.49 + 10) +
2 x (60 x 0.83 + 10) + 1) ~ 1,000 s of one-thread work at that load, about half on a quiet
machine (the stress run, mu = 4, took 608 s on two workers): some 5-8 minutes on two workers
(``python scripts/run_experiment.py v32_tricks_base --workers 2``).
"""

from __future__ import annotations

from labkit.experiments import v32_tricks as v32
from labkit.experiments.harness import Experiment
from labkit.experiments.off_policy_base import BASE_SETTING, NOTE, TAG, trains


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed at ``BASE_SETTING`` (defined here, so worker processes load this
    module's ``EXPERIMENT``)."""
    return v32.train_at(
        BASE_SETTING, arm, settings, seed=seed, steps=steps, fast=fast, run_name=run_name, tick=tick
    )


EXPERIMENT = Experiment(
    name="v32_tricks_base",
    lab="81_v32_off_policy_tricks",
    arms=v32.ARMS,
    train=train,
    steps=60,
    fast_steps=4,
    curves=v32.EXPERIMENT.curves,
    claims=(
        trains(
            v32.PLAIN,
            f"{v32.SOURCE}'s baseline; the set-up's precondition",
            "plain GRPO, the tricks' baseline,",
        ),
        *v32.claims(TAG, crash=NOTE),
    ),
    live={"arms": [v32.PLAIN, v32.MASKED, v32.TOP, v32.KEPT], "seeds": (0, 1), "steps": 60},
)
