"""Outcome vs process supervision in GRPO on the graded task: does the step signal help more on
longer chains?

Lab 95's ``prm`` compares the two on ``scratchpad``, where every thought has four steps; process
beat outcome there by about a point. DeepSeekMath (Shao et al. 2024, arXiv 2402.03300, sec.
4.1.3, sec. 5.2.2) argues that process supervision gives a finer signal than one bit for the
answer, which should matter more the longer the chain: with one outcome bit for four steps,
GRPO cannot tell which step failed. On ``graded`` (``labkit.tasks.graded``) a correct thought
has (k - 1) d steps, one place value each: 1 on ``2x1``, 2 on ``3x1`` and ``2x2``, 3 on ``4x1``,
4 on ``5x1`` and ``3x2``; the chains vary within one batch.

Two arms from ``tiny-graded``, lab 90's GRPO set-up (``r1_zero.SETUP``: 16 prompts x G = 4,
lr 5e-4, mu = 1, beta = 0, the task's 97 tokens), the same seeds:
  GRPO, outcome   r = answer_match, group z-score advantage (R1's accuracy reward)
  GRPO, process   DeepSeekMath's process supervision with the exact step labels
                  (``labkit.algos.process.ProcessGRPOTrainer``, the steps read by
                  ``labkit.rewards.process`` with ``task="graded"``: each thought step, then the
                  answer): r~_k normalised over the group's steps, A_t = sum_{k: e_k >= t} r~_k
The right-step share (``graded_step_correctness``) and the think rate are logged at weight 0 in
both. Held-out per cell (``labkit.experiments.cells``, re-checks per thought too): every held-out
prompt (128 a cell, 20 for ``2x1``), one sample at T = 1, the run's seed, after RL; the cold
start's (``PROBE_SEED``, once a process) as "before".

The claims and their rule, fixed before any run: paired over the five seeds (the arms share
them), the 95 % Student-t interval of the per-seed differences process - outcome excludes 0 on
the paper's side (``claims``):
  process-accuracy   held-out pass rate over all cells, ``pass (all) after``: process > outcome.
  hard-gain          ``pass: hard - easy`` (a run's pass rate after RL on the two-digit cells,
                     ``cells.HARD``, minus the one-digit ones'): process > outcome, i.e. the
                     difference of differences (P_hard - O_hard) - (P_easy - O_easy) > 0.
  long-chain-gain    the same by chain length in steps, ``pass: long - short``: long = the
                     4-step cells (``5x1``, ``3x2``), short = the cells of 1-2 steps (``2x1``,
                     ``3x1``, ``2x2``), each cell weighted equally; ``4x1`` (3 steps) in neither.
The hard cells are not simply the long ones: ``2x2`` has 2 steps, ``5x1`` 4. ``hard-gain`` is
the contrast the issue names (two digits: larger numbers, steps with a carry into the hundreds);
``long-chain-gain`` is DeepSeekMath's argument taken literally (steps per chain).

Why the toy lets the effect happen: the cold start thinks on about half the prompts and its
thoughts go wrong more often the longer the chain (tiny-graded's card, measured before this
experiment: a forced thought is right on 0.93 of ``2x1``, 0.65 and 0.40 of the 2-step ``3x1``
and ``2x2``, 0.37 and 0.05 of the 4-step ``5x1`` and ``3x2``), so a step label carries what the
answer bit does not: a thought right up to its third step and wrong at its fourth gets credit
for three steps under process supervision and none under outcome supervision. On ``3x2`` most
groups of four hold no right answer (the card: on 0.69 of its prompts none of 8 samples is
right), so outcome GRPO gets no gradient there while the step labels still tell the thoughts
apart: the sparser the outcome, the more the finer signal has to add. What would falsify it:
process no higher than outcome on the same seeds, or a gain no larger on the hard (long) cells
than on the easy (short) ones. Caveats, stated before the run: process rewards pay each right
step, re-checks included (``graded_steps`` labels a re-check right), so they also reward
thinking and length, which pay on the hard cells (a confound the ``think`` and ``rechecks``
columns show); and ``graded_steps`` matches steps to the chain in order, so after a wrong step
the true steps that follow it are wrong too (a wrong step costs the rest of the chain, as it
costs the answer).

Budget (<= ~900 s of one-thread work): 40 steps, 5 seeds x 2 arms
(``python scripts/run_experiment.py prm_graded --workers 2``); fewer steps than lab 90's 150, so
the comparison is of the first part of training (DeepSeekMath's fig. 5 compares the two along
the whole of it).
Pilot for timing only (``PILOT``: seed 100, the process arm, 3 steps, full probes, one thread,
load average ~3.5 on the 2 cores from another stored run and other helpers): the cold-start
probe (660 prompts, with re-checks) 11.2 s once a worker; steps 2 and 3 1.6 and 1.8 s; the run
with its set-up and its held-out probe 13.2 s, so set-up + probe ~8 s. 10 runs x (40 x 1.8 s +
8 s) + 2 x 11 s ~ 820 s of one-thread work, about 7 minutes on two workers. A quiet machine may
run it faster, but lab 90's graded pilot measured 1.9 s a step uncontended, so the loaded figure
is the one to budget (the process arm's step parsing, Python over 64 completions, is ms).
Departure: DeepSeekMath's process supervision uses a learned PRM on MATH; here the exact step
labels stand in for it (as in ``prm``'s process arm).
"""

from __future__ import annotations

from labkit.algos.grpo import GRPOTrainer
from labkit.algos.process import ProcessGRPOTrainer
from labkit.experiments.arms import grpo_run
from labkit.experiments.cells import EASY, HARD, changes, cold_start_cells, heldout_cells
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, Outcome
from labkit.experiments.r1_zero import SETUP, thinks
from labkit.rewards.process import graded_step_correctness
from labkit.rewards.reasoning import answer_match

CLAIM = (
    "Process supervision gives a finer signal than outcome supervision, and it matters more the "
    "longer the chain (DeepSeekMath, Shao et al. 2024, arXiv 2402.03300, sec. 4.1.3, fig. 5, "
    "sec. 5.2.2). On the graded toy: GRPO from tiny-graded with step rewards vs the answer "
    "alone, held-out per cell; does the process arm end more accurate, and more so on the "
    "two-digit cells and on the 4-step chains than on the short ones?"
)
MODEL = "tiny-graded"
ARMS = {
    "GRPO, outcome": {"trainer": "grpo"},
    "GRPO, process": {"trainer": "process"},
}
TRAINERS = {"grpo": GRPOTrainer, "process": ProcessGRPOTrainer}
HELDOUT = {"full": 128, "fast": 8}
"""Held-out prompts per cell (all of them at 128; 2x1 has 20), one sample each at T = 1."""
PROBE_SEED = 1000
"""The cold start's probe seed: one "before" for every run."""
LONG, SHORT = ("5x1", "3x2"), ("2x1", "3x1", "2x2")
"""Cells by steps in a correct thought ((k - 1) d): 4 steps, and 1-2 steps."""
GROUPS = {"long": LONG, "short": SHORT}
PILOT = {"seed": 100, "steps": 3, "s/step": 1.7, "run overhead s": 8.0, "cold start s": 11.2}
"""The timing pilot (module docstring)."""


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed: GRPO (outcome or process) on ``graded`` from ``tiny-graded`` with
    ``SETUP`` and the task's completion length, then held-out per cell (:func:`summarize`)."""
    per_cell = HELDOUT["fast" if fast else "full"]
    trainer = grpo_run(
        MODEL,
        {},
        seed=seed,
        steps=steps,
        run_name=run_name,
        tick=tick,
        trainer_cls=TRAINERS[settings["trainer"]],
        reward_funcs=[answer_match, graded_step_correctness, thinks],
        reward_weights=[1.0, 0.0, 0.0],  # the process arm's advantages come from its steps
        task="graded",
        track_kl=False,
        save_steps=max(1, steps // 3),
        **{**SETUP, "max_completion_length": None},
    )
    m = trainer.log.metrics
    after = heldout_cells(
        trainer.model, trainer.tokenizer, per_cell=per_cell, seed=seed, extra=True
    )
    trainer.log.close()  # the run is done: its folder is free for a later resume
    before = cold_start_cells(MODEL, per_cell, PROBE_SEED, extra=True)
    return Outcome(summarize(before, after), m)


def cell_mean(stats: dict, stat: str, cells) -> float:
    """``stat``'s mean over ``cells``, each weighted equally (missing cells skipped).

    >>> cell_mean({"pass (5x1)": 0.5, "pass (3x2)": 0.25}, "pass", LONG)
    0.375
    """
    vals = [stats[f"{stat} ({c})"] for c in cells if f"{stat} ({c})" in stats]
    return sum(vals) / len(vals)


def summarize(before: dict, after: dict) -> dict:
    """Every held-out stat before and after RL and its gain (``changes``), the long and short
    cells' pass rates (``LONG``, ``SHORT``, cells weighted equally), and the two contrasts the
    claims judge: ``pass: hard - easy`` and ``pass: long - short``, after RL.

    >>> cells = ("2x1", "3x1", "4x1", "5x1", "2x2", "3x2")
    >>> b = {f"pass ({c})": 0.5 for c in (*cells, "hard", "easy", "all")}
    >>> a = {**b, "pass (hard)": 0.3, "pass (easy)": 0.6, "pass (5x1)": 0.7, "pass (3x2)": 0.3}
    >>> s = summarize(b, a)
    >>> round(s["pass: hard - easy"], 3), round(s["pass: long - short"], 3), s["pass (long) gain"]
    (-0.3, 0.0, 0.0)
    """
    out = {}
    for side, stats in (("before", before), ("after", after)):
        out[side] = stats | {f"pass ({g})": cell_mean(stats, "pass", c) for g, c in GROUPS.items()}
    s = changes(out["before"], out["after"])
    a = out["after"]
    s["pass: hard - easy"] = a["pass (hard)"] - a["pass (easy)"]
    s["pass: long - short"] = a["pass (long)"] - a["pass (short)"]
    return s


SOURCE = "DeepSeekMath (Shao et al. 2024, arXiv 2402.03300)"
EXPERIMENT = Experiment(
    name="prm_graded",
    lab="95_orm_vs_prm",
    arms=ARMS,
    train=train,
    steps=40,
    fast_steps=2,
    curves=(
        "accuracy",
        "rewards/graded_step_correctness/mean",
        "rewards/thinks/mean",
        "len/mean",
    ),
    claims=(
        Claim(
            "process-accuracy",
            "GRPO with process supervision ends more accurate than with outcome supervision",
            f"{SOURCE} sec. 4.1.3, fig. 5",
            metric="pass (all) after",
            arm="GRPO, process",
            baseline="GRPO, outcome",
            note="held-out pass rate over every cell after RL (660 prompts, one sample at T = 1)",
        ),
        Claim(
            "hard-gain",
            "process supervision's gain over outcome supervision is larger on the hard "
            "(two-digit) cells than on the easy ones",
            f"{SOURCE} sec. 5.2.2 (a finer signal matters more on longer chains); issue 27",
            metric="pass: hard - easy",
            arm="GRPO, process",
            baseline="GRPO, outcome",
            note=f"the paired difference is (process - outcome) on {'+'.join(HARD)} minus "
            f"(process - outcome) on {'+'.join(EASY)}: a difference of differences",
        ),
        Claim(
            "long-chain-gain",
            "process supervision's gain over outcome supervision is larger on 4-step chains "
            "than on chains of 1-2 steps",
            f"{SOURCE} sec. 5.2.2",
            metric="pass: long - short",
            arm="GRPO, process",
            baseline="GRPO, outcome",
            note=f"long: {', '.join(LONG)} (4 steps); short: {', '.join(SHORT)} (1-2 steps); "
            "cells weighted equally; a difference of differences, as hard-gain",
        ),
    ),
    live={"arms": list(ARMS), "seeds": (0, 1), "steps": 40},
)
