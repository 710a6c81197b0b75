"""Lab 78's base section: entropy collapse, what holds entropy up and the beta frontier at the
labs' base GRPO run, where plain GRPO trains.

:mod:`labkit.experiments.entropy_kl` runs eleven arms at ``DRIFT`` (mu = 4 at lr 1e-3), a
stress setting where runs dip early and some collapse, so its arms are compared partly on how
they crash. Here the GRPO arms run at ``SETTING``, ``BASE_RUN`` as it is (``digit_partial``,
32 prompts x 4, mu = 2 updates per batch at lr 5e-4, beta = 0), with the same summaries
(:func:`~labkit.experiments.entropy_kl.summary`) and the same claims' rules
(:func:`~labkit.experiments.entropy_kl.grpo_claims`), tagged "base setting". Every arm runs on
the same seeds; each claim is a paired difference over them.

Choosing the setting (a precondition on the set-up, not on the claims): the plain arm only, seed
100 (not a stored seed), 100 steps at ``BASE_RUN``, full probes; no other arm was run. Looked
at: whether its reward and accuracy rise. Reward 0.434 -> 0.614 (first and last tenth; the ten
tenths 0.43, 0.45, 0.49, 0.54, 0.52, 0.54, 0.56, 0.57, 0.58, 0.61), held-out accuracy 0.410
(the cold start, 300 prompts) -> 0.637. It trained, so no other setting was tried. The same run
also recorded the two preconditions below: entropy 0.348 -> 0.228 (first and last tenth), and
the upper clip's fraction ``clip/ratio_high``, averaged over both inner updates, 0.0101 in the
first tenth, 0.0001 in the last, 0.0034 over the run (0.019 at ``DRIFT`` in the stress result).

Why the set-up lets each effect happen, and what would falsify it:
- entropy collapse: the plain arm's entropy falls while its reward rises (the pilot's seed did);
  the claim fails if the last tenth's entropy is not below the first tenth's on the stored seeds.
- entropy bonus: -c_H H_bar pushes every token's distribution flatter each update, against the
  policy term's sharpening; falsified if the bonus arm's last-tenth entropy is not above the
  plain arm's on the same seeds.
- clip-higher: it acts only on tokens whose ratio passes 1 + eps = 1.2 with A > 0. At mu = 2 the
  first update's ratio is 1; over both updates the upper clip binds on about one token in a
  hundred early in the run and almost none late (the pilot), so clip-higher changes the gradient
  of few tokens: the effect CAN happen (the clip binds) but has little to act on, a weak test
  (the claims' note). Both clip-higher claims are kept with that mark; an interval around 0
  says the knob is idle here, not that DAPO is wrong.
- the beta frontier: the plain arm (beta = 0) drifts from pi_ref as it learns; beta k3 in the
  loss pulls back toward pi_ref, so a larger beta should end closer (k1, k3) and, with the pull
  against the reward's gradient, lower in reward. Falsified if beta 0.3's final KL is not below
  the plain arm's, or its reward not below.

Left to the stress section (``entropy_kl``): the tau = 1.2 arm (no claim of its own) and PPO's KL
placement (three PPO arms at ``PPOTrainer``'s defaults, lr 1e-3, itself a stress setting on this
toy: lab 79 trains PPO at lr 3e-4).

Budget, sized from the timing pilot below, which looked at nothing but time: 5 seeds x 7 arms x
60 steps (the stress experiment's length; in the choice pilot reward and entropy had moved by
step 60). Timing pilot: seed 100, 3 steps, full probes, one thread, load average ~6 on the 2
cores from other jobs: the entropy-bonus arm (the costliest: the entropy's gradient) 0.78, 0.73
s a step, the plain arm 0.61, 0.59; the choice pilot above took 60 s for 100 steps with
checkpoints, the held-out probe 0.3 s. 35 runs x (60 x 0.65 + 3) s ~ 1,470 s of one-thread
work, about 12 minutes on two workers (``python scripts/run_experiment.py entropy_kl_base
--workers 2``); on a quiet machine about half that.
"""

from __future__ import annotations

from labkit.algos.config import BASE_RUN
from labkit.experiments import entropy_kl
from labkit.experiments.entropy_kl import BASE, BETAS, ENTROPY_ARMS, grpo_claims, run
from labkit.experiments.harness import Experiment

SETTING = {k: v for k, v in BASE_RUN.items() if k != "max_steps"}
"""The GRPO configuration of every arm: ``BASE_RUN`` as it is (mu = 2 at lr 5e-4, beta = 0)."""
ARMS = {
    **{arm: s for arm, s in ENTROPY_ARMS.items() if arm != "temperature 1.2"},
    **{arm: {"beta": b} for b, arm in BETAS.items() if b > 0},
}
"""Plain GRPO, clip-higher, the entropy bonus and the beta sweep (``entropy_kl``'s arms)."""
PILOT = {"seed": 100, "steps": 3, "s/step": 0.65, "probes s": 0.3}
"""The timing pilot (module docstring): seconds a step at one thread on a loaded machine."""
NOTE = "BASE_RUN (mu = 2 at lr 5e-4), where plain GRPO trains (chosen on the plain arm alone)"
CLIP_NOTE = (
    "at mu = 2 the upper clip binds on few tokens, mostly early (clip/ratio_high (run)): "
    "clip-higher has little to act on, a weak test"
)


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed at ``SETTING`` (defined here, so worker processes load this
    module's ``EXPERIMENT``)."""
    return run(
        SETTING, arm, settings, seed=seed, steps=steps, fast=fast, run_name=run_name, tick=tick
    )


EXPERIMENT = Experiment(
    name="entropy_kl_base",
    lab="78_entropy_and_kl",
    arms=ARMS,
    train=train,
    steps=60,
    fast_steps=4,
    curves=entropy_kl.EXPERIMENT.curves,
    claims=grpo_claims("base setting", NOTE, CLIP_NOTE),
    live={"arms": [BASE, "entropy bonus, c_H 0.05", "beta 0.3"], "seeds": (0, 1), "steps": 60},
)
