"""R1-Zero on the graded task: does RL lengthen answers where thinking pays, and only there?

Lab 90's first toy (``scratchpad``) has thoughts of one fixed length, so its "length grows"
could only be a switch to thinking (``labkit.experiments.r1_zero``). On ``graded``
(``labkit.tasks.graded``: six cells from ``2x1``, two one-digit numbers, to ``3x2``, three
two-digit numbers, in one pool) a correct thought's length grows with the cell, and whether it
pays differs by cell: from the cold start ``tiny-graded`` (its card,
``labkit/checkpoints/tiny-graded/labkit_card.json``, measured before this experiment was
written) forcing a thought beats forcing a direct answer by a wide margin on ``2x2`` and not at
all on ``5x1``. DeepSeek-R1 (arXiv 2501.12948, sec. 2.2.4, fig. 3) says RL with an accuracy
and a format reward makes responses grow longer as accuracy grows, the model learning by itself
to spend more thinking on harder problems.

Two arms from ``tiny-graded``, the same GRPO set-up as lab 90 (``r1_zero.SETUP``: 16 prompts x
G = 4, lr 5e-4, mu = 1, beta = 0) with the task's own completion length (97 tokens):
  think + format   r = answer_match + 0.5 think_format   (R1-Zero's recipe)
  acc only         r = answer_match                      (thinking must pay for itself)
The format reward pays for any thought, so "the model learns to think where it pays" is judged
on the accuracy-only arm. Held-out stats per cell, before and after RL: every held-out prompt
(128 per cell, 20 for ``2x1``), one sample each at temperature 1, the run's seed. "Hard" is
the two-digit cells (``2x2``, ``3x2``: 256 prompts), "easy" the one-digit ones.

Budget, fixed before the run: 150 steps (2.5x lab 90's 60: the hard cells are a third of the
pool), 5 seeds; a 6-step pilot on seed 100 measured only the time per step (1.9 s, one thread).
"""

from __future__ import annotations

from labkit.experiments.cells import changes, cold_start_cells, heldout_cells
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, Outcome
from labkit.experiments.r1_zero import CURVES, RECIPE, SOURCE, W_FORMAT, recipe_run, slope

CLAIM = (
    "DeepSeek-R1-Zero (DeepSeek-AI 2025, arXiv 2501.12948, sec. 2.2.4, fig. 3): RL with an "
    "accuracy and a format reward raises accuracy while the responses grow longer, the model "
    "learning by itself to spend more thinking on harder problems. On the graded toy: accuracy "
    "and length rise on the hard (two-digit) prompts, and without the format reward the policy "
    "learns to think more where a thought pays (2x2) than where it does not (5x1)."
)
MODEL = "tiny-graded"
PAYS, DOES_NOT = "2x2", "5x1"
"""The cells where forcing a thought helps most and not at all (tiny-graded's card)."""
HELDOUT = {"full": 128, "fast": 8}
"""Held-out prompts per cell (all of them at 128; 2x1 has 20), one sample each at T = 1."""
ARMS = {
    "think + format": {"reward_weights": [1.0, W_FORMAT]},
    "acc only": {"reward_weights": [1.0, 0.0]},
}
"""Arm -> the weights of ``[answer_match, think_format]``."""


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed: GRPO on ``graded`` from ``tiny-graded`` (``SETUP`` with the task's
    completion length, the weight-0 ``METRICS`` logged), held-out per cell before and after,
    and the training batch's length slope over the second half."""
    per_cell = HELDOUT["fast" if fast else "full"]
    before = cold_start_cells(MODEL, per_cell, seed)
    trainer = recipe_run(
        MODEL,
        settings["reward_weights"],
        "graded",
        seed,
        steps,
        run_name,
        tick,
        max_completion_length=None,  # the task's own: 97 tokens
    )
    m = trainer.log.metrics
    after = heldout_cells(trainer.model, trainer.tokenizer, per_cell=per_cell, seed=seed)
    summary = changes(before, after)
    summary[f"think gain: {PAYS} - {DOES_NOT}"] = (
        summary[f"think ({PAYS}) gain"] - summary[f"think ({DOES_NOT}) gain"]
    )
    summary["len/mean slope (2nd half)"] = slope(m[m["step"] > steps / 2], "len/mean")
    trainer.log.close()
    return Outcome(summary, m)


EXPERIMENT = Experiment(
    name="r1_zero_graded",
    lab="90_r1_zero_aha",
    arms=ARMS,
    train=train,
    steps=150,
    curves=CURVES,
    claims=(
        Claim(
            "accuracy",
            "RL with accuracy + format rewards raises accuracy",
            f"{SOURCE} sec. 2.2.4, fig. 2",
            metric="pass (all) gain",
            arm=RECIPE,
            note="Held-out pass rate over all cells after RL minus the cold start's.",
        ),
        Claim(
            "hard-accuracy",
            "... and raises it on the hard prompts",
            f"{SOURCE} sec. 2.2.4",
            metric="pass (hard) gain",
            arm=RECIPE,
            note="Hard: the two-digit cells 2x2 and 3x2.",
        ),
        Claim(
            "hard-length",
            "responses on the hard prompts grow longer as accuracy grows",
            f"{SOURCE} sec. 2.2.4, fig. 3",
            metric="length (hard) gain",
            arm=RECIPE,
            note="Mean completion characters on the two-digit cells, held-out.",
        ),
        Claim(
            "steady",
            "response length keeps growing through training",
            f"{SOURCE} sec. 2.2.4, fig. 3",
            metric="len/mean slope (2nd half)",
            arm=RECIPE,
            note="Training-batch length (tokens) per step over the second half.",
        ),
        Claim(
            "thinks-where-hard",
            "without a format reward, the policy learns to think on a cell where thinking pays",
            f"{SOURCE} sec. 2.2.4 (thinking emerges from the accuracy reward)",
            metric=f"think ({PAYS}) gain",
            arm="acc only",
            note=f"{PAYS}: the cell where a forced thought beats a forced direct answer most at "
            "the cold start (tiny-graded's card, accuracy_forced_think vs accuracy_forced_direct).",
        ),
        Claim(
            "thinks-where-it-pays",
            f"... more where it pays ({PAYS}) than where it does not ({DOES_NOT})",
            f"{SOURCE} sec. 2.2.4",
            metric=f"think gain: {PAYS} - {DOES_NOT}",
            arm="acc only",
            note=f"{DOES_NOT}: a forced thought no better than a direct answer at the cold start.",
        ),
    ),
    live={"arms": list(ARMS), "seeds": (0, 1), "steps": 40},
)
