"""Prioritized sampling by pass rate, and a curriculum from easy to hard, against uniform
sampling (Kimi k1.5's sampling strategies), on a pool whose prompts differ in difficulty.

Kimi k1.5 (arXiv 2501.12599, sec. 2.3.4, "sampling strategies"): *curriculum sampling* starts
on easier problems and moves to harder ones; *prioritized sampling* tracks each problem's
success rate s_i and draws problems in proportion to 1 - s_i, so training goes where the
policy fails. A GRPO group of G answers teaches only when its rewards differ; its chance of
that, 1 - s^G - (1 - s)^G, peaks at s = 1/2, so a third rule weighs prompts by s (1 - s).

The toy: GRPO from ``tiny-graded`` on ``graded`` (six difficulty cells, ``2x1`` to ``3x2``, in
one pool; :mod:`labkit.tasks.graded`) with R1-Zero's rewards and set-up (answer_match + 0.5
think_format, 16 prompts x G = 4, lr 5e-4, the task's 97 tokens), the train prompts a fixed
pool of 256 (about 43 per cell) so each is drawn several times, drawn by
:class:`~labkit.tasks.curriculum.PassRateSampler`: ``uniform``, ``failure`` (Kimi's
prioritized sampling), ``variance`` (s (1 - s)) or ``easy-first`` (one more cell unlocked every
sixth of the run, easiest first). Every arm runs on the same seeds (a seed fixes the pool, the
policy's sampling and the updates), same budget: 60 steps, fixed before the run (the CPU's
budget: 4 arms x 5 seeds). Summarised by the held-out pass rate per cell after training (every
held-out prompt, one sample at T = 1; :mod:`labkit.experiments.cells`), the share of zero-spread
groups (``adv/frac_zero_std``: no gradient), the training batches' accuracy (how hard the drawn
prompts were), the share of draws from the hard (two-digit) cells and the pool prompts never
drawn.

Departure: a prompt's pass rate is counted over the whole run (Kimi does not say how it ages).
"""

from __future__ import annotations

from labkit.experiments import r1_zero
from labkit.experiments.arms import grpo_run
from labkit.experiments.cells import HARD, cold_start_cells, heldout_cells
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, Outcome
from labkit.tasks import get_task
from labkit.tasks.curriculum import PassRateSampler

CLAIM = (
    "Kimi k1.5 (arXiv 2501.12599, sec. 2.3.4): sampling problems in proportion to their failure "
    "rate 1 - s_i (prioritized sampling), or from easy to hard (curriculum sampling), trains "
    "better than uniform sampling. On the graded toy: GRPO from tiny-graded on a 256-prompt pool "
    "of six difficulty cells, uniform vs failure-weighted vs s(1 - s)-weighted vs easy-first "
    "draws on the same seeds and budget: held-out pass rate, and how hard the drawn prompts were."
)
MODEL = "tiny-graded"
SETUP = {k: v for k, v in r1_zero.SETUP.items() if k != "max_completion_length"} | {
    "reward_funcs": ["answer_match", "think_format"],
    "reward_weights": [1.0, r1_zero.W_FORMAT],
}
"""The R1-Zero lab's GRPO setup (16 prompts x G = 4, lr 5e-4, mu = 1, no KL) with its rewards;
the task's completion length."""
ARMS = {"uniform": {}, "failure": {}, "variance": {}, "easy-first": {}}
"""Arm name = the sampler's weight rule; nothing else differs."""
POOL = 256
HELDOUT = {"full": 128, "fast": 8}
"""Held-out prompts per cell (all of them at 128; 2x1 has 20), one sample each at T = 1."""
SOURCE = "Kimi k1.5 (Kimi Team 2025, 2501.12599)"


def sampler(arm: str, seed: int, steps: int) -> PassRateSampler:
    """The arm's sampler on a pool of ``POOL`` graded train prompts fixed by ``seed``
    (``easy-first`` unlocks its cells over ``steps``)."""
    horizon = {"horizon": steps} if arm == "easy-first" else {}
    return PassRateSampler(get_task("graded"), weight=arm, pool=POOL, seed=seed, **horizon)


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One GRPO run from ``tiny-graded`` with prompts drawn by the arm's rule, summarised by
    :func:`summary`."""
    trainer = grpo_run(
        MODEL,
        settings,
        seed=seed,
        steps=steps,
        run_name=run_name,
        tick=tick,
        task=sampler(arm, seed, steps),
        track_kl=False,
        save_steps=max(1, steps // 3),
        **SETUP,
    )
    out = summary(trainer, HELDOUT["fast" if fast else "full"], seed)
    trainer.log.close()
    return Outcome(out, trainer.log.metrics)


def hard_share(task: PassRateSampler) -> float:
    """The share of draws that took a hard (two-digit) cell's prompt."""
    cell = {e.prompt: e.columns["bucket"] for e in task.train}
    drawn = sum(task.seen.values())
    return sum(n for p, n in task.seen.items() if cell[p] in HARD) / max(1, drawn)


def summary(trainer, per_cell: int, seed: int) -> dict:
    """Held-out stats per cell after training (:func:`~labkit.experiments.cells.heldout_cells`)
    and the cold start's pass rate over all cells; over the run: the zero-spread groups' share,
    the training batches' accuracy, the hard cells' share of draws; pool prompts never drawn."""
    m, task = trainer.log.metrics, trainer.task
    before = cold_start_cells(MODEL, per_cell, seed)
    after = heldout_cells(trainer.model, trainer.tokenizer, per_cell=per_cell, seed=seed)
    return after | {
        "pass (all) before": before["pass (all)"],
        "zero-spread groups": float(m["adv/frac_zero_std"].mean()),
        "batch accuracy": float(m["accuracy"].mean()),
        "hard share of draws": hard_share(task),
        "prompts never drawn": sum(v == 0 for v in task.seen.values()) / len(task.seen),
    }


EXPERIMENT = Experiment(
    name="curriculum",
    lab="97_prioritized_sampling",
    arms=ARMS,
    train=train,
    steps=60,
    fast_steps=4,
    curves=("accuracy", "adv/frac_zero_std", "rewards/think_format/mean", "len/mean"),
    claims=(
        Claim(
            "failure-weighted",
            "prioritized sampling by failure rate (1 - s_i) trains better than uniform sampling",
            f"{SOURCE} sec. 2.3.4",
            metric="pass (all)",
            arm="failure",
            baseline="uniform",
            note="Held-out pass rate over all six cells after training.",
        ),
        Claim(
            "failure-hard",
            "... and better on the hard prompts it draws more of",
            f"{SOURCE} sec. 2.3.4",
            metric="pass (hard)",
            arm="failure",
            baseline="uniform",
            note="Hard: the two-digit cells 2x2 and 3x2.",
        ),
        Claim(
            "harder-prompts",
            "failure-weighted sampling trains on harder prompts (lower training-batch accuracy)",
            f"{SOURCE} sec. 2.3.4",
            metric="batch accuracy",
            arm="failure",
            baseline="uniform",
            direction=-1,
        ),
        Claim(
            "variance-signal",
            "weighting prompts by s(1 - s) leaves fewer zero-spread groups than uniform",
            f"{SOURCE} sec. 2.3.4; zero-spread groups: DAPO (2503.14476) sec. 3.2",
            metric="zero-spread groups",
            arm="variance",
            baseline="uniform",
            direction=-1,
            note="the lab's corollary of GRPO's signal 1 - s^G - (1 - s)^G, not Kimi's claim",
        ),
        Claim(
            "easy-first",
            "a curriculum from easy to hard trains better than uniform sampling",
            f"{SOURCE} sec. 2.3.4 (curriculum sampling)",
            metric="pass (all)",
            arm="easy-first",
            baseline="uniform",
            note="One more cell unlocked every sixth of the run, in the task's order (more "
            "operands, then more digits); every cell equally in the last sixth.",
        ),
    ),
    live={"arms": ["uniform", "failure"], "seeds": (0, 1), "steps": 40},
)
