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

import numpy as np
import pandas as pd

from labkit.experiments.arms import grpo_run
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, Outcome
from labkit.experiments.r1_zero import CURVES, METRICS, SETUP, W_FORMAT, slope, thinks
from labkit.models.policy import load_policy
from labkit.runs.evaluate import probe
from labkit.tasks.graded import Graded

CLAIM = (
    "DeepSeek-R1-Zero (DeepSeek-AI 2025, arXiv 2501.12948, sec. 2.2.4, fig. 3): RL with an "
    "accuracy and a format reward raises accuracy while the responses grow longer, the model "
    "learning by itself to spend more thinking on harder problems. On the graded toy: accuracy "
    "and length rise on the hard (two-digit) prompts, and without the format reward the policy "
    "learns to think more where a thought pays (2x2) than where it does not (5x1)."
)
MODEL = "tiny-graded"
HARD, EASY = ("2x2", "3x2"), ("2x1", "3x1", "4x1", "5x1")
PAYS, DOES_NOT = "2x2", "5x1"
"""The cells where forcing a thought helps most and not at all (tiny-graded's card)."""
HELDOUT = {"full": 128, "fast": 8}
"""Held-out prompts per cell (all of them at 128; 2x1 has 20), one sample each at T = 1."""
STATS = ("pass", "think", "length")
ARMS = {
    "think + format": {"reward_weights": [1.0, W_FORMAT]},
    "acc only": {"reward_weights": [1.0, 0.0]},
}
"""Arm -> the weights of ``[answer_match, think_format]``."""


def heldout_cells(model, tokenizer, per_cell: int, seed: int) -> dict:
    """Held-out pass rate, think rate (:func:`~labkit.experiments.r1_zero.thinks`) and mean
    completion length (characters) per cell, for the hard and easy cells pooled and over all:
    ``{"pass (2x2)": .., "think (hard)": .., ...}``."""
    task = Graded()
    taken: dict[str, int] = {}
    examples = []
    for e in task.heldout:
        b = e.columns["bucket"]
        if taken.get(b, 0) < per_cell:
            taken[b] = taken.get(b, 0) + 1
            examples.append(e)
    p = probe(model, tokenizer, task, examples=examples, seed=seed)
    cells = {b: [i for i, e in enumerate(examples) if e.columns["bucket"] == b] for b in taken}
    groups = cells | {
        "hard": [i for b in HARD for i in cells.get(b, [])],
        "easy": [i for b in EASY for i in cells.get(b, [])],
        "all": list(range(len(examples))),
    }
    ok = np.array(p.correct, dtype=float)
    think = np.array(thinks(p.completions))
    length = np.array([len(c) for c in p.completions], dtype=float)
    out = {}
    for g, idx in groups.items():
        out |= {f"pass ({g})": ok[idx].mean(), f"think ({g})": think[idx].mean()}
        out[f"length ({g})"] = length[idx].mean()
    return out


def changes(before: dict, after: dict) -> dict:
    """``<stat> before``, ``<stat> after`` and ``<stat> gain`` for every held-out stat.

    >>> changes({"pass (all)": 0.5}, {"pass (all)": 0.75})
    {'pass (all) before': 0.5, 'pass (all) after': 0.75, 'pass (all) gain': 0.25}
    """
    out = {}
    for k, b in before.items():
        out |= {f"{k} before": b, f"{k} after": after[k], f"{k} gain": after[k] - b}
    return out


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed: GRPO on ``graded`` from ``tiny-graded`` (``SETUP`` with the task's
    completion length, the weight-0 ``METRICS`` logged), held-out per cell before and after,
    and the training batch's length slope over the second half."""
    per_cell = HELDOUT["fast" if fast else "full"]
    before = heldout_cells(*load_policy(MODEL), per_cell=per_cell, seed=seed)
    trainer = grpo_run(
        MODEL,
        {"reward_weights": [*settings["reward_weights"], *[0.0] * len(METRICS)]},
        seed=seed,
        steps=steps,
        run_name=run_name,
        tick=tick,
        reward_funcs=["answer_match", "think_format", *METRICS],
        task="graded",
        track_kl=False,
        save_steps=max(1, steps // 3),
        **{**SETUP, "max_completion_length": None},
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


def cell_table(summaries: pd.DataFrame, stat: str = "pass") -> pd.DataFrame:
    """Per arm and cell (easiest first), the mean over seeds of ``stat`` before and after RL
    and its gain: the per-difficulty table of lab 90.

    >>> s = pd.DataFrame({"arm": ["a", "a"], "seed": [0, 1], "pass (2x1) before": [0.5, 0.7],
    ...                   "pass (2x1) after": [0.9, 0.9], "pass (2x1) gain": [0.4, 0.2]})
    >>> cell_table(s).round(2).to_dict("records")
    [{'arm': 'a', 'cell': '2x1', 'before': 0.6, 'after': 0.9, 'gain': 0.3}]
    """
    rows = []
    cells = [c for c in (*EASY, *HARD, "hard", "easy", "all") if f"{stat} ({c}) gain" in summaries]
    for arm, d in summaries.groupby("arm", sort=False):
        for c in cells:
            k = f"{stat} ({c})"
            rows.append(
                {"arm": arm, "cell": c}
                | {w: float(d[f"{k} {w}"].mean()) for w in ("before", "after", "gain")}
            )
    return pd.DataFrame(rows)


SOURCE = "DeepSeek-R1 (DeepSeek-AI 2025, arXiv 2501.12948)"
RECIPE = "think + format"
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
