"""RFT vs Online RFT vs GRPO on equal samples, on the graded task (DeepSeekMath, sec. 5.2.1).

DeepSeekMath (Shao et al. 2024, arXiv 2402.03300, sec. 5.2.1, eq. 5, fig. 5, appendix A.1)
writes every method's gradient as E_{(q, o) ~ D}[1/|o| sum_t GC(q, o, t) grad log pi_theta]
and compares three methods that differ in one piece each (``labkit.algos.rft``):
  offline RFT   D: samples of the SFT model pi_sft       GC = I(o), 1 when the answer is right
  online RFT    D: samples of the live policy pi_theta   GC = I(o)
  GRPO          D: as online RFT                          GC = the group z-score of r: also
                                                          negative on wrong answers
Their fig. 5 (DeepSeekMath-Instruct 1.3B, GSM8K and MATH): online RFT "significantly
outperforms" RFT, comparable early and ahead later, "as the data sampled from the actor will
exhibit more significant differences" from the SFT model's; GRPO surpasses online RFT,
"highlighting the efficiency of altering positive and negative gradient coefficients".

The toy: the ``graded`` task (six cells, ``2x1`` to ``3x2``, in equal shares) from the cold
start ``tiny-graded``, lab 90's GRPO set-up (``r1_zero.SETUP``: 16 prompts x G = 4 a step,
lr 5e-4 with linear decay, mu = 1, beta = 0, the task's 97 tokens), r = answer_match (the rule:
I(o), as RFT's filter), with ``loss_type="grpo"`` for all three (the paper's 1/|o| per sample;
lab 90 uses DAPO's token-level mean). Every arm runs the same trainer loop, seed for seed: the same
prompts each step (the trainer's prompt sampler, seeded alike), the same 64 samples a step
(counted in the summary), the same lr and schedule; only D and GC differ:
  offline RFT   ``OfflineRFTTrainer``: samples of a frozen copy of tiny-graded, A = r
  online RFT    ``GRPOTrainer(advantage_estimator="reinforce")``: A = r
  GRPO          ``GRPOTrainer(advantage_estimator="grpo")``: A = (r - mean_G) / std_G
One lr for all is fixed, not tuned: AdamW's step size is set by the lr, not by the loss's scale
(A in {0, 1} or z-scores), and it is the lr lab 90's GRPO runs learn with on this toy.

Why the toy lets each effect happen (and what would falsify it). Online vs offline: GRPO at this
set-up moves tiny-graded far within 60 steps (lab 34's stored accuracy-only arm: the pooled
held-out pass rate up, and a thought in nearly every answer where the cold start thinks about
half the time), so the live policy's samples soon differ from pi_sft's (more thoughts, more
right answers on the harder cells: more kept samples, and samples of what the policy now does);
offline RFT keeps imitating pi_sft's right answers, about half of them direct answers, which
on ``2x2`` hardly ever come out right (tiny-graded's card). If the policy barely moves in the
budget, the two data sources stay alike and the claim is inconclusive (the paper's "early
stage"). GRPO vs
online RFT: on an easy cell where all four answers are right GRPO's coefficient is 0 and online
RFT's is 1 (it keeps reinforcing what is solved); in a group with one right answer of four
GRPO gives it 1.5 (n - 1 std) and the wrong ones -0.5, online RFT 1 and 0. So GRPO puts its
updates on the prompts the policy sometimes fails, most of them on the hard cells, and pushes
wrong answers down. If GRPO's z-score merely rescaled online RFT's updates (AdamW would absorb
that), the two would tie.

Measured after RL, per cell (:func:`~labkit.experiments.cells.heldout_cells`: every held-out
prompt, 128 a cell and 20 for ``2x1``, one sample each at T = 1, the run's seed): pass rate,
think rate, length, and pooled with the cells weighted as the training pool draws them
(:func:`~labkit.experiments.lagrange.pool_mean`); the cold start's ("before") once, at
``PROBE_SEED``. During the run, every ``steps // PROBES`` steps, the pooled stats on 32 prompts
a cell (the held-out curve of fig. 5; the last one is the full probe).

Budget: 3 arms x 5 seeds x 50 steps (``python scripts/run_experiment.py rft --workers 2``),
probes at steps 10, 20, 30, 40 (32 a cell) and 50 (128 a cell). Pilot, for timing only (seed
100, the GRPO arm, 3 steps, probes after each step, the last full, one thread, load average 5
to 6.8 on the 2 cores from other jobs: about 2.5x contended, 35 s of CPU in 87 s of wall):
5.07, 4.02, 4.65 s a step (1.9 s uncontended in labs 90 and 34); a probe of 32 a cell 5.2 and
6.2 s, of 128 a cell 17.9 s, the cold start's as much (about 2.3 and 7 s uncontended).
15 runs x (50 steps x 1.9 s + 4 x 2.3 + 7 + ~3 s of set-up) + 2 workers x 7 s ~ 1,730 s of
one-thread work: about 15 min on two workers uncontended, ~35 at the pilot's load.
"""

from __future__ import annotations

import pandas as pd

from labkit.algos.grpo import GRPOTrainer
from labkit.algos.rft import OfflineRFTTrainer
from labkit.experiments.arms import Probes, grpo_run, tail_means
from labkit.experiments.cells import changes, cold_start_cells, heldout_cells
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, Outcome
from labkit.experiments.lagrange import pool_mean
from labkit.experiments.r1_zero import SETUP as LAB90
from labkit.experiments.r1_zero import thinks

CLAIM = (
    "DeepSeekMath (Shao et al. 2024, arXiv 2402.03300, sec. 5.2.1, fig. 5): on the same "
    "questions and the same number of samples, online RFT (fine-tuning on the live policy's "
    "correct samples) beats RFT (on the SFT model's correct samples), and GRPO (which also "
    "pushes wrong answers down, by the group-normalised advantage) beats online RFT. On the "
    "graded toy from tiny-graded: held-out pass rate after RL, the cells pooled as training "
    "draws them."
)
MODEL = "tiny-graded"
SETUP = {
    **LAB90,
    "max_completion_length": None,  # the task's own: 97 tokens
    "loss_type": "grpo",  # the paper's eq. 5: 1/|o| sum_t per sample, a mean over samples
    "reward_funcs": ["answer_match", thinks],
    "reward_weights": [1.0, 0.0],  # r = I(o); the think rate logged at weight 0
}
"""The set-up all three arms share (lab 90's, with the per-sample loss of the paper)."""
OFFLINE, ONLINE, GRPO = "offline RFT", "online RFT", "GRPO"
ARMS = {
    OFFLINE: {"advantage_estimator": "reinforce", "offline": True},
    ONLINE: {"advantage_estimator": "reinforce"},
    GRPO: {"advantage_estimator": "grpo"},
}
"""Arm -> the advantage (GC) and whether the samples come from the frozen pi_sft."""
PROBE_SEED = 1000
"""The cold-start probe's sampling seed: one "before" for every run."""
HELDOUT = {"full": 128, "fast": 8}
"""Held-out prompts per cell at the end (all of them at 128; 2x1 has 20), one sample each."""
DURING = {"full": 32, "fast": 8}
"""Held-out prompts per cell of the probes during the run."""
PROBES = 5
"""Probes a run: every ``steps // PROBES`` steps (the last at the end, full size)."""
POOLED = ("pass", "think", "length")
CURVES = (
    *(f"held-out {s} (pool)" for s in POOLED),
    "accuracy",
    "rewards/thinks/mean",
    "len/mean",
    "adv/frac_zero_std",
)
"""Held-out probes (step 0: the cold start) and the training batch's accuracy, think rate,
length (tokens) and share of groups with equal rewards (GRPO's A = 0)."""
SOURCE = "DeepSeekMath (Shao et al. 2024, arXiv 2402.03300)"


def pooled(stats: dict) -> dict:
    """``<stat> (pool)`` for pass, think and length: the cells weighted equally, as drawn."""
    return {f"{s} (pool)": pool_mean(stats, s) for s in POOLED}


def cold_start(per_cell: int) -> dict:
    """The cold start's held-out stats per cell and pooled, at ``PROBE_SEED`` (once a
    process)."""
    stats = cold_start_cells(MODEL, per_cell, PROBE_SEED)
    return stats | pooled(stats)


def probe_fn(seed: int, steps: int, fast: bool):
    """What a probe records at a step: every held-out stat per cell and pooled; the last step's
    on ``HELDOUT`` prompts a cell, the others' on ``DURING``."""
    mode = "fast" if fast else "full"

    def probe(trainer) -> dict:
        n = HELDOUT[mode] if trainer.global_step >= steps else DURING[mode]
        stats = heldout_cells(trainer.model, trainer.tokenizer, per_cell=n, seed=seed)
        return stats | pooled(stats) | {"per cell": n}

    return probe


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed from ``tiny-graded``: ``steps`` steps of the arm's trainer with
    ``SETUP``, probed on held-out prompts during the run and at the end."""
    settings = dict(settings)
    cls = OfflineRFTTrainer if settings.pop("offline", False) else GRPOTrainer
    trainer = grpo_run(
        MODEL,
        settings,
        seed=seed,
        steps=steps,
        run_name=run_name,
        tick=tick,
        until=Probes(probe_fn(seed, steps, fast), max(1, steps // PROBES)),
        trainer_cls=cls,
        task="graded",
        track_kl=False,
        save_steps=max(1, steps // 3),
        **SETUP,
    )
    m, probes = trainer.log.metrics, Probes.read(trainer)
    trainer.log.close()  # the run is done: its folder is free for a later resume
    cold = cold_start(HELDOUT["fast" if fast else "full"])
    after = probes.iloc[-1].to_dict()
    return Outcome(summarize(cold, after, m), curves(m, probes, cold))


def summarize(cold: dict, after: dict, metrics: pd.DataFrame) -> dict:
    """Every held-out stat before (the cold start), after and its gain (``pool`` too), the
    samples drawn and the right ones among them (from the run's steps), and the last tenth of
    the batch's accuracy.

    >>> stats = {f"{s} ({c})": 0.5 for s in POOLED for c in ("pool", "hard")}
    >>> m = pd.DataFrame({"step": [1, 2], "accuracy": [0.25, 0.5]})
    >>> s = summarize(stats, stats | {"pass (pool)": 0.75}, m)
    >>> s["pass (pool) gain"], s["samples drawn"], s["right samples drawn"]
    (0.25, 128, 48)
    """
    per_step = SETUP["prompts_per_step"] * SETUP["num_generations"]
    return changes(cold, after) | {
        "samples drawn": per_step * len(metrics),
        "right samples drawn": round(per_step * float(metrics["accuracy"].sum())),
        **tail_means(metrics, ["accuracy"]),
    }


def curves(metrics: pd.DataFrame, probes: pd.DataFrame, cold: dict) -> pd.DataFrame:
    """The training metrics per step, with the held-out pooled stats on probed steps (step 0:
    the cold start) as ``held-out <stat> (pool)``.

    >>> m = pd.DataFrame({"step": [1, 2], "accuracy": [0.2, 0.4]})
    >>> p = pd.DataFrame({"step": [2], "pass (pool)": [0.6], "think (pool)": [0.5],
    ...                   "length (pool)": [30.0]})
    >>> c = curves(m, p, {"pass (pool)": 0.4, "think (pool)": 0.5, "length (pool)": 28.0})
    >>> c["step"].tolist(), c["held-out pass (pool)"].tolist()[::2]
    ([0, 1, 2], [0.4, 0.6])
    """
    keys = [f"{s} (pool)" for s in POOLED]
    held = pd.concat([pd.DataFrame([{"step": 0, **{k: cold[k] for k in keys}}]), probes])
    held = held[["step", *keys]].rename(columns={k: f"held-out {k}" for k in keys})
    out = metrics.merge(held, on="step", how="outer").sort_values("step")
    return out.reset_index(drop=True)


SEC = f"{SOURCE}, sec. 5.2.1, fig. 5"
EXPERIMENT = Experiment(
    name="rft",
    lab="94_rft_vs_grpo",
    arms=ARMS,
    train=train,
    steps=50,
    fast_steps=4,
    curves=CURVES,
    claims=(
        Claim(
            "online-beats-offline",
            "online RFT beats offline RFT on the same prompts and samples",
            f"{SEC} (online RFT significantly outperforms RFT; the gap opens late in training)",
            metric="pass (pool) after",
            arm=ONLINE,
            baseline=OFFLINE,
            note="Held-out pass rate after RL, the six cells weighted equally as the training "
            "pool draws them; paired by seed (same prompts, same number of samples).",
        ),
        Claim(
            "grpo-beats-online",
            "GRPO beats online RFT: its coefficient also pushes wrong answers down",
            f"{SEC} (GRPO surpasses online RFT); appendix A.1, eq. 10 vs 21",
            metric="pass (pool) after",
            arm=GRPO,
            baseline=ONLINE,
            note="The paper's GRPO used a learned reward where online RFT used the rule; "
            "here both use the rule, so only the gradient coefficient differs.",
        ),
        Claim(
            "grpo-beats-online-hard",
            "on the hard (two-digit) cells GRPO beats online RFT",
            f"a consequence of {SOURCE}'s coefficients (appendix A.1, eq. 10 vs 21), not a "
            "finding of the paper: GRPO's is 0 on groups all right and largest on a lone "
            "right answer, so its updates go where the policy sometimes fails",
            metric="pass (hard) after",
            arm=GRPO,
            baseline=ONLINE,
            note="Held-out pass rate on 2x2 and 3x2 together (256 prompts).",
        ),
    ),
    live={"arms": [OFFLINE, ONLINE, GRPO], "seeds": (0, 1), "steps": 20},
)
