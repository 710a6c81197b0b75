"""R1's distillation claim on a fair set-up: the graded task's two-digit cells, which the small
student cannot answer directly.

DeepSeek-R1 (arXiv 2501.12948, sec. 4.1): distilling a strong reasoning model's samples into a
small model by SFT beats training that small model by large-scale RL. Lab 93's first test
(``labkit.experiments.r1_pipeline``) did not reproduce it on equal compute, and the RL student
won **without thinking**: five one-digit operands are half solved by a 2-layer student's direct
answers before any training, so RL sharpened direct answers. That tests "distillation vs RL where
the direct route is within reach", not R1's setting, where a small model cannot solve the maths
in one pass. Here the prompts are the ``graded`` task's two-digit cells (``2x2``: ``"07+35="``,
``3x2``: ``"12+07+93="``, ``labkit.tasks.graded``), where a direct answer adds two or three
two-digit numbers in one forward pass, which small models fail at (the teacher ``tiny-graded``,
eight times the student's size, gets 0.01 and 0.02 forced to answer directly, its card), while a
thought of running sums splits the sum into one-column steps, each easy.

Teacher: the shipped ``tiny-graded`` (``scripts/make_graded_checkpoint.py``), taken as given, as
R1 takes R1 (its sampling is charged to the run's time, not to either student's compute). Its
card: forced to think it passes 0.39 on ``2x2`` and 0.05 on ``3x2`` (the fused checkpoint under
``/think``: 0.40 and 0.10, but it is being rebuilt, so not used). Rejection sampling (R1 sec.
2.3.3, ``keep="correct_think"``: verified correct, with a non-empty ``<think>``): 2 samples at
T = 1 on each of 2048 distinct train prompts of the two cells, the task's 97 tokens, per seed
(the teacher's samples differ by seed; the data are part of what a seed replicates).

Student (``labkit.experiments.r1_student``): the hidden-64, 2-layer Llama (~0.12 M parameters,
an eighth of the teacher) from random init, pretrained by SFT on the direct answers
(``<answer>112</answer>``) of every graded train prompt, all six cells, 300 steps of 64 at lr
3e-3, as lab 93's student; both arms start from the same base per seed.

Prompt pool: **the two-digit cells only**, for both arms (the pool's train split is the graded
task's own train split cut to ``2x2`` and ``3x2``, so the held-out prompts stay unseen), decided
before any run: the claim is about a task the student cannot do directly, and on the one-digit
cells a direct answer is within reach, which is the set-up the first test already measured. On
all six cells the RL student would spend most of its compute sharpening direct answers on easy
prompts and the teacher's kept traces would be mostly easy-cell ones (its pass rates are higher
there); on the hard cells alone both arms spend everything on the cells judged, which is also the
most RL can get from this compute. The one-digit cells are probed too (forgetting), not judged.

Arms, on equal compute (``labkit.experiments.compute``: forward-token units, 1 a token sampled,
3 a token trained; the budget fixed in closed form before any run, as r1_pipeline's):
  budget       ``r1_student.distil_units(steps, pool())``: ``steps`` x 64 pairs of the mean
               size of a correct thought on the pool (half 2x2, half 3x2, no re-checks),
               3 units a token, fixed before any run
  distill      SFT of the base on the kept traces (64 pairs a step, lr 3e-3 constant,
               ``r1_student.DISTIL_LR``) for the steps that spend the budget
               (:func:`distil_steps`: the kept traces are mostly 2x2 ones, shorter than the
               pool's mean thought: 1319 steps for the pilot's traces)
  student RL   GRPO from the base with the teacher's rewards (``r1_pipeline.RL``: answer_match +
               0.5 think_format, 16 prompts x G = 4, lr 3e-4, mu = 1, beta = 0) and the task's
               97 tokens, until it has spent that budget (a direct answer is about a third of a
               thought, so it gets about 1.8 times the distillation's steps)
Both students are probed on held-out prompts at each quarter of their budget
(:func:`probe`: every held-out prompt of every cell, 128 a cell, 20 for ``2x1``, one sample at
T = 1, seed + 1); "student accuracy" is the pass rate on the two-digit cells (256 prompts).

Why the set-up lets the effect happen, and what would falsify it: the base cannot add two-digit
numbers in one pass, so the RL student's groups of 4 are almost all wrong and GRPO's advantages
almost all zero; it has no thought to reinforce either (the format reward pays only a thought it
never writes). The distilled student sees correct one-column steps and can learn to write them.
It fails if a 2-layer student cannot learn to write correct running sums from a few hundred
traces within its steps (its thoughts then go wrong and it passes no more than the RL student),
or if RL finds direct answers after all (the base is not as poor as the pilot says). Either
outcome is kept: a finding about a student this small.

Pilots (seed 100, one thread; the 2 cores shared with other helpers' jobs, load average 7 to 9,
so two to four times the quiet times).
  Student base (300 steps of direct answers): held-out pass rate 0.016 on 2x2 and 0.023 on 3x2
  (0.50 on 2x1, 0.17 over the one-digit cells): it cannot answer the two-digit cells directly,
  so the set-up is fair in the sense of R1's claim.
  Teacher's rejection sample: 4096 drawn, 520 kept (0.13; 472 distinct, 452 of the 2048 prompts
  covered), 439 of them on 2x2 and 81 on 3x2.
  Plateau (the distill arm only, its own held-out pass rate on the two-digit cells every 100
  steps to 1400; never the RL arm): 0.004, 0.012, 0.020, 0.031, 0.055, 0.055, 0.078, 0.094,
  0.070, 0.129, 0.148, 0.148, 0.102, 0.160 (2x2 0.24 to 0.31 from step 1000, 3x2 about 0.01
  throughout; it thinks on 0.6 of them at step 100, 0.97 from 1100). A slow start, a rise to
  about 1100 steps, then level within a probe's noise (s.e. ~0.02) to 1400: ``steps`` = 1200,
  fixed from it (the budget of 1200 steps of pool-sized thoughts; on the pilot's traces that is
  1319 steps, about 160 epochs). ``distil-plateau`` compares the end with the probes at each
  quarter, as r1_pipeline does; its 3/4 probe (step ~990) lies on the pilot's rise, so it may
  read "still rising" where the end is level: the pilot's late probes are the evidence that the
  steps suffice; a verdict against distillation is a step budget only if the distilled student
  is still rising at its end. The data, not the steps, may be what limits it: the teacher
  passes 3x2 about one time in twenty, so few kept traces are 3x2 ones.
  Timing (the RL arm, ``steps=10``, full pretraining and probes, load ~7): the job 54.5 s, its
  base's 300 steps at 0.128 s, 19 RL steps at 0.247 s (1.9 for each distillation step), five
  probes of 3 to 5 s; from the plateau pilot (load ~8): rejection sampling 87 s, distillation
  0.37 to 0.41 s a step. Per seed at that load: distill ~90 + 40 + 1320 x 0.39 + 25 ~ 670 s,
  student RL ~40 + 2300 x 0.25 + 25 ~ 640 s; 5 seeds ~ 6,600 s of one-thread work, about half
  (~3,300 s, 28 min on two workers) on a quiet machine
  (``python scripts/run_experiment.py distill_graded --workers 2``). That is over the ~1,800 s
  this experiment was allotted: at the ~400 steps the allotment allows, the pilot's distilled
  student was still near its base's level (0.031 against 0.02), the step-budget comparison
  issue 27 names; the RL student on equal compute is half of the cost.
"""

from __future__ import annotations

import functools
import random
from collections import Counter

import pandas as pd

from labkit.algos.rejection import rejection_sample
from labkit.experiments import r1_student as student
from labkit.experiments.cells import EASY, HARD, heldout_cells
from labkit.experiments.claims import Claim
from labkit.experiments.compute import sft_units
from labkit.experiments.harness import Experiment, Outcome
from labkit.experiments.r1_pipeline import RL as TEACHER_RL
from labkit.experiments.r1_pipeline import SOURCE, share
from labkit.models.policy import load_policy
from labkit.tasks.graded import Graded

CLAIM = (
    "DeepSeek-R1 (DeepSeek-AI 2025, arXiv 2501.12948, sec. 4.1): a small model distilled (SFT) "
    "on a strong reasoning model's samples beats the same small model trained by RL. On the "
    "toy, on a task the student cannot do directly (graded's two-digit cells): SFT on "
    "tiny-graded's verified thoughts against GRPO with the teacher's rewards, on equal compute."
)
TEACHER = "tiny-graded"
DISTILL, STUDENT_RL = "distill", "student RL"
ARMS = {DISTILL: {"distil": True}, STUDENT_RL: {"distil": False}}
RL = TEACHER_RL | {"max_completion_length": None}
"""The student's GRPO: the teacher's rewards and set-up, with the task's 97 tokens (a 3x2
thought is about 70 characters, over r1_pipeline's 64)."""
RS_PROMPTS, RS_SAMPLES = 2048, 2
"""Rejection sampling: ``RS_SAMPLES`` of the teacher on each of ``RS_PROMPTS`` distinct train
prompts of the pool (r1_pipeline's numbers)."""
PER_CELL = {"full": 128, "fast": 8}
"""Held-out prompts per cell of each probe (128: all of them; 2x1 has 20)."""
CELL_NAMES = (*EASY, *HARD)


@functools.cache
def pool() -> Graded:
    """The graded task with its train split cut to the two-digit cells (``cells.HARD``); its
    held-out split is the whole task's, so no probed prompt is ever trained on. One object a
    process (the compute helpers cache by it).

    >>> sorted({e.columns["bucket"] for e in pool().train}), len(pool().heldout)
    (['2x2', '3x2'], 660)
    """
    task = Graded()
    task.train = [e for e in task.train if e.columns["bucket"] in HARD]
    return task


def budget(steps: int, fast: bool) -> dict:
    """The sizes of one job from the distillation's ``steps``: the RL student's step cap (never
    reached unless its completions shrink to a few tokens), the rejection sample's prompts, the
    base's pretraining steps and the held-out prompts a cell (fast: 64 prompts, 20 steps, 8).

    >>> b = budget(400, fast=False)
    >>> b["distil"], b["rl_cap"], b["rs_prompts"] * RS_SAMPLES, b["pretrain"], b["per_cell"]
    (400, 2400, 4096, 300, 128)
    """
    return {
        "distil": steps,
        "rl_cap": 6 * steps,
        "rs_prompts": 64 if fast else RS_PROMPTS,
        "pretrain": 20 if fast else 300,
        "per_cell": PER_CELL["fast" if fast else "full"],
    }


def probe(model, tokenizer, per_cell: int, seed: int) -> dict:
    """Held-out stats per cell (:func:`~labkit.experiments.cells.heldout_cells`) with
    ``accuracy`` and ``think_rate`` the two-digit cells' pass and think rates (what
    ``r1_student.summary`` reads)."""
    h = heldout_cells(model, tokenizer, per_cell=per_cell, seed=seed)
    return {"accuracy": h["pass (hard)"], "think_rate": h["think (hard)"], **h}


def traces(seed: int, prompts: int):
    """The teacher's rejection sample on ``prompts`` distinct pool prompts (``RS_SAMPLES``
    each, the task's 97 tokens, ``keep="correct_think"``)."""
    model, tok = load_policy(TEACHER)
    drawn = random.Random(seed).sample(pool().train, prompts)
    return rejection_sample(
        model, tok, pool(), drawn, RS_SAMPLES, keep="correct_think", seed=seed,
        max_completion_length=None,
    )  # fmt: skip


def kept_summary(rs) -> dict:
    """What rejection sampling kept: count, share of the drawn, distinct traces, and the share
    of kept traces from ``3x2`` (three operands).

    >>> from labkit.algos.rejection import RejectionSample
    >>> rs = RejectionSample(["1+2=", "01+02+03="], ["<think>x</think><answer>3</answer>"] * 2,
    ...                      ["3", "6"], [True, True], [True, True], [9, 9], "correct_think")
    >>> kept_summary(rs)["kept 3x2 share"]
    0.5
    """
    s, pairs = rs.stats(), rs.pairs
    operands = Counter(len(p.split("+")) for p, _ in pairs)
    return {
        "kept traces": s["kept"],
        "kept share": s["kept_frac"],
        "distinct kept traces": len(set(pairs)),
        "kept 3x2 share": operands[3] / max(1, len(pairs)),
    }


def cell_columns(prefix: str, stats: dict) -> dict:
    """``stats``' pass and think rates per cell and pooled, renamed ``"<prefix> pass (2x2)"``.

    >>> cell_columns("student", {"pass (2x2)": 0.5, "length (2x2)": 9.0, "accuracy": 0.5})
    {'student pass (2x2)': 0.5}
    """
    keep = [f"{s} ({c})" for s in ("pass", "think") for c in (*CELL_NAMES, "hard", "easy")]
    return {f"{prefix} {k}": float(stats[k]) for k in keep if k in stats}


def cell_table(summaries: pd.DataFrame, stat: str = "pass") -> pd.DataFrame:
    """Per cell (easiest first, then the pools), the mean over seeds of ``stat`` for the base
    (direct answers; the same base in both arms) and for each arm's student at the end.

    >>> s = pd.DataFrame({"arm": ["distill", "student RL"], "seed": [0, 0],
    ...                   "base pass (2x2)": [0.0, 0.0], "student pass (2x2)": [0.5, 0.1]})
    >>> cell_table(s).to_dict("index")
    {'2x2': {'base': 0.0, 'distill': 0.5, 'student RL': 0.1}}
    """
    cells = [c for c in (*CELL_NAMES, "hard", "easy") if f"student {stat} ({c})" in summaries]
    rows = {}
    for c in cells:
        row = {"base": float(summaries[f"base {stat} ({c})"].mean())}
        for arm, d in summaries.groupby("arm", sort=False):
            row[arm] = float(d[f"student {stat} ({c})"].mean())
        rows[c] = row
    return pd.DataFrame.from_dict(rows, orient="index")


def distil_steps(units: float, pairs) -> int:
    """The SFT steps of ``student.BATCH`` drawn ``pairs`` that spend ``units`` (the nearest
    whole number; ``ValueError`` without pairs).

    >>> distil_steps(3 * 30 * 64 * 10, [("1+2+3+4+5=", "<answer>15</answer>")])  # 90 units a pair
    10
    """
    if not pairs:
        raise ValueError("rejection sampling kept no traces: nothing to distil")
    return max(1, round(units / (student.BATCH * sft_units(pairs) / len(pairs))))


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed: (distill only) the teacher's traces, the student's base, then its
    training (the module docstring). The traces fill the first 15 % of the job's bar, the base
    5 %."""
    b, task, out = budget(steps, fast), pool(), {}
    bar = lambda start, end: share(tick, steps, start, end)
    held = lambda m, tok: probe(m, tok, b["per_cell"], seed + 1)
    units, first = student.distil_units(b["distil"], task), 0.15 if settings["distil"] else 0.0
    if settings["distil"]:
        rs = traces(seed, b["rs_prompts"])
        sft_steps = distil_steps(units, rs.pairs)
        out |= kept_summary(rs) | {"distillation epochs": sft_steps * student.BATCH / len(rs.pairs)}
        bar(0.0, first)(1, 1)
    base = student.base(run_name, b["pretrain"], seed, bar(first, first + 0.05), "graded")
    base_stats = held(*load_policy(base))
    out |= {"student base accuracy": base_stats["accuracy"]} | cell_columns("base", base_stats)
    common = {"seed": seed, "probe": held, "tick": bar(first + 0.05, 1.0), "task": task}
    if settings["distil"]:
        t, p, spent = student.distil(base, rs.pairs, run_name, steps=sft_steps, **common)
    else:
        t, p, spent = student.rl(base, run_name, units=units, max_steps=b["rl_cap"], **common, **RL)
    curves = t.log.metrics
    t.log.close()
    end = p.iloc[-1].to_dict()
    out |= student.summary(p, spent / units, t.global_step) | cell_columns("student", end)
    return Outcome(out, curves)


EXPERIMENT = Experiment(
    name="distill_graded",
    lab="93_r1_pipeline",
    arms=ARMS,
    train=train,
    steps=1200,
    fast_steps=4,
    curves=("loss", "accuracy", "rewards/think_format/mean", "len/mean"),
    claims=(
        Claim(
            "distillation",
            "distilling a reasoning model's traces into a small model beats RL on the small "
            "model, on a task it cannot do directly, on equal compute",
            f"{SOURCE} sec. 4.1 (distilled Qwen-32B beats R1-Zero-Qwen-32B trained by RL)",
            metric="student accuracy",
            arm=DISTILL,
            baseline=STUDENT_RL,
            note="Held-out pass rate on graded's two-digit cells (2x2, 3x2: 256 prompts, one "
            "sample at T = 1) of the student after SFT on tiny-graded's kept traces vs after GRPO "
            "from the same base until the same compute (forward-token units); paired by seed.",
        ),
        Claim(
            "distilled-thinks",
            "the distilled student thinks on the hard cells (at least half the time)",
            "the comparison's precondition (the student learned the teacher's way), not a claim "
            "of the paper",
            metric="student think rate",
            arm=DISTILL,
            effect=0.5,
            note="Share of the two-digit held-out completions with a well-formed, non-empty "
            "thought at the end. Not reproduced: the interval lies below 0.5.",
        ),
        student.plateau_claim(DISTILL, "Two-digit held-out pass rate"),
        student.equal_compute_claim(
            STUDENT_RL,
            DISTILL,
            " of kept traces (a re-checked step makes a trace longer than the budget's)",
        ),
    ),
    live={"arms": [DISTILL, STUDENT_RL], "seeds": (0, 1), "steps": 200},
)
