"""Kimi k1.5's length reward and long2short again, from a cold start whose re-checks survive
accuracy RL: ``kimi_length``'s arms, claims and summaries on ``tiny-graded-recheck``.

Why ``kimi_length`` could not decide "by cutting redundant re-checks" (lab 92, its stored
result): GRPO on accuracy alone (its ``acc`` arm) removed almost every re-check within the
warm-up, before the length terms started. Accuracy RL sharpens the policy toward the modes its
correct samples already share; ``tiny-graded`` re-checks in a minority of its thoughts (its SFT
targets re-check one thought in three), so the re-check, neutral for accuracy, faded with the
minority. Kimi's length penalty acts on a long-CoT RL policy that still overthinks; the first
toy's RL policy no longer did, so the claims had nothing redundant left to cut.

What changed: only the cold start. ``tiny-graded-recheck`` (``scripts/make_graded_checkpoint.py
--base tiny-graded --steps 400 --recheck 0.85``: continued SFT of ``tiny-graded`` on the same
task, the same think share in its targets, 0.85 of the thoughts re-checking one or two steps)
makes the re-check the dominant mode of a thought. The recipe was fixed from what the card had to
show (re-checks in most thoughts, pass rates near ``tiny-graded``'s), before any RL run. Its
card (lab 92 shows it beside ``tiny-graded``'s): re-checks in most thoughts on the four one-digit
cells, fewer on ``2x2`` and few on ``3x2`` (where the policy's steps are mostly wrong, and only a
re-check of a correct step counts); pass rates per cell near ``tiny-graded``'s; re-checked
thoughts at least about as accurate as plain ones on every cell (``accuracy_rechecked``,
``accuracy_plain``; biased upward, since a detected re-check needs a correct step, but no sign
that a re-check costs accuracy). Sharpening now works for the re-checks, not against them: an
accuracy-only policy should keep them, and a length reward (or long2short's pairs, where the
rarer plain thought is the shortest correct answer) is then the pressure that removes them, as
in Kimi's setting.

Precondition, stated before the run: re-checks survive accuracy RL, i.e. the ``acc`` arm keeps
more than half its cold start's re-checks per thought (``KEPT``: rechecks (all) after - 1/2 x
before, > 0 with its 95 % interval). Half: enough left that a length reward has most of the
redundancy to cut (half of this cold start's re-checks per thought is still above
``tiny-graded``'s level before any RL: ``kimi_length``'s "rechecks (all) before"), and far from
what the first set-up's acc arm kept (almost none). If it fails ("not reproduced"), the set-up is
still unfair: the "by cutting re-checks" claims then test nothing about Kimi's method, whatever
their verdicts. What would falsify the set-up's premise: the precondition failing, or re-checked
thoughts less accurate than plain ones.

Arms (settings, reasons and departures: ``kimi_length``'s docstring; same seeds, steps, W,
warm-up, DPO): ``acc``, ``acc + kimi`` and ``long2short``. Two departures, both for the budget
and fixed from the pilot's timings only: the ``acc + plain`` arm and its claim (Kimi against a
plain penalty) are dropped (the question here is whether Kimi's methods cut the redundancy, not
how its reward compares with a cruder one); long2short samples its pairs on ``PAIR_PROMPTS``
(512) training prompts x 8, a quarter of ``kimi_length``'s 2,048: the pilot's pair sampling was
the largest cost of a long2short run, and on a policy that re-checks in most thoughts a quarter
still gives DPO a few passes over a hundred or more pairs (the pilot's 3-step policy, which
thinks less than an RL policy does, gave 544 pairs at 2,048 prompts).

Budget (``python scripts/run_experiment.py kimi_recheck --workers 2``): 5 seeds x (2 GRPO arms x
60 steps + long2short). Pilot, for timing only (seed 100: 3 steps of the kimi arm, full probes,
pairs sampled at 2,048 prompts, 3 DPO steps; one thread; load average ~8 on the 2 cores from
other jobs, so about 2.3x slow): ``PILOT``. Scaled to an idle core (lab 90's uncontended 1.9 s a
GRPO step): a GRPO run 60 x 1.9 + ~10 s ~ 124 s, 10 of them ~1,240 s; a long2short run ~37 s of
pair sampling (512 prompts) + at most 30 DPO steps x ~0.8 s + ~10 s ~ 70 s, 5 of them ~350 s;
the cold-start probe ~12 s once a worker. About 1,600 s of one-thread work: ~14 min on two
workers, more with the step-time noise this machine shows.
"""

from __future__ import annotations

from labkit.experiments import kimi_length as kl
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment

MODEL = "tiny-graded-recheck"
"""The cold start whose re-checks are the dominant mode of a thought (its card)."""
ACC, KIMI, L2S = kl.ACC, kl.KIMI, kl.L2S
ARMS = {a: kl.ARMS[a] for a in (ACC, KIMI, L2S)}
"""``kimi_length``'s arms without ``acc + plain`` (budget); long2short still last."""
KEPT = "rechecks kept (all)"
"""Re-checks per thought after, less half the cold start's: > 0 when more than half survive."""
PAIR_PROMPTS = {"full": 512, "fast": 16}
"""Training prompts long2short samples (x 8) for its pairs: a quarter of ``kimi_length``'s
(budget: module docstring)."""
PILOT = {
    "GRPO s/step (kimi arm)": (4.67, 3.67, 2.74),
    "cold-start probe s": 26.7,
    "held-out probe s": 12.9,
    "pairs sampling s (2048 prompts x 8)": 341.7,
    "pairs (2048 prompts, the 3-step policy)": 544,
    "DPO 3 steps s (with set-up)": 5.6,
    "load average": (8.1, 8.2),
}
"""The timing pilot (seed 100, one thread, a loaded machine: module docstring)."""


def kept(summary: dict) -> float:
    """The precondition's column: re-checks per thought after, less half of before.

    >>> kept({"rechecks (all) after": 0.75, "rechecks (all) before": 1.0})
    0.25
    """
    return summary["rechecks (all) after"] - summary["rechecks (all) before"] / 2


def train(arm: str, settings: dict, **kwargs):
    """``kimi_length``'s run of ``arm`` from ``MODEL``, with the precondition's column."""
    out = kl.train(arm, settings, policy=MODEL, pair_prompts=PAIR_PROMPTS, **kwargs)
    out.summary[KEPT] = kept(out.summary)
    return out


PRECONDITION = Claim(
    "rechecks-survive",
    "Precondition: re-checks survive accuracy RL (the acc arm keeps more than half of them)",
    "labkit's set-up (not a paper's claim): Kimi's length penalty acts on a long-CoT RL policy "
    f"that overthinks, {kl.SOURCE} sec. 2.3.3; the rule is this module's docstring",
    metric=KEPT,
    arm=ACC,
    note="Re-checks per thought after accuracy-only GRPO, less half the cold start's. Not "
    "reproduced: the set-up is still unfair, the 'by cutting re-checks' claims test nothing.",
)
CLAIMS = (
    PRECONDITION,
    *(c for c in kl.CLAIMS if c.arm in ARMS and (c.baseline is None or c.baseline in ARMS)),
)

EXPERIMENT = Experiment(
    name="kimi_recheck",
    lab="92_kimi_length_penalty",
    arms=ARMS,
    train=train,
    steps=kl.EXPERIMENT.steps,
    claims=CLAIMS,
    curves=tuple(c for c in kl.EXPERIMENT.curves if "plain_length" not in c),
    live={"arms": [ACC, KIMI], "seeds": (0, 1), "steps": 30},
)
