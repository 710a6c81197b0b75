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
--base tiny-graded --recheck 0.85``: continued SFT of ``tiny-graded`` on the same task, the same
think share, 0.85 of the thoughts re-checking one or two steps) makes the re-check the dominant
mode of a thought, and its card shows it harmless there: per cell, the accuracy of its re-checked
thoughts beside that of its plain ones (``accuracy_rechecked``, ``accuracy_plain``), and pass
rates per cell beside ``tiny-graded``'s. The recipe was fixed from what the card had to show
(re-checks in most thoughts, pass rates near ``tiny-graded``'s), before any RL run. Sharpening
now works for the re-checks, not against them: an accuracy-only policy should keep them, and a
length reward (or long2short's pairs, where the rarer plain thought is the shortest correct
answer) is then the only pressure that removes them, as in Kimi's setting.

Precondition, stated before the run: re-checks survive accuracy RL, i.e. the ``acc`` arm keeps
more than half its cold start's re-checks per thought (``KEPT``: rechecks (all) after - 1/2 x
before, > 0 with its 95 % interval). Half: enough left that a length reward has most of the
redundancy to cut (on ``tiny-graded-recheck`` half its level is still more re-checks per thought
than ``tiny-graded`` had before any RL, its card); ``kimi_length``'s acc arm kept about a tenth.
If it fails ("not reproduced"), the set-up is still unfair: the "by cutting re-checks" claims then
test nothing about Kimi's method, whatever their verdicts. What would falsify the set-up's
premise: re-checked thoughts less accurate than plain ones (the card), or the precondition
failing.

Arms (settings, reasons and departures: ``kimi_length``'s docstring; same seeds, steps, W,
warm-up, DPO): ``acc``, ``acc + kimi`` and ``long2short``. The ``acc + plain`` arm and its claim
(Kimi against a plain penalty) are dropped to fit the budget: the question here is whether
Kimi's methods cut the redundancy, not how its reward compares with a cruder one.

Budget (``python scripts/run_experiment.py kimi_recheck --workers 2``): 5 seeds x (2 GRPO arms x
60 steps + DPO). Pilot, for timing only: ``PILOT`` (module docstring's end).
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
PILOT: dict = {}
"""The timing pilot (module docstring)."""


def kept(summary: dict) -> float:
    """The precondition's column: re-checks per thought after, less half of before.

    >>> kept({"rechecks (all) after": 0.75, "rechecks (all) before": 1.0})
    0.25
    """
    return summary["rechecks (all) after"] - summary["rechecks (all) before"] / 2


def train(arm: str, settings: dict, **kwargs):
    """``kimi_length``'s run of ``arm`` from ``MODEL``, with the precondition's column."""
    out = kl.train(arm, settings, policy=MODEL, **kwargs)
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
