"""Adaptive thinking on the graded task: Qwen3's thinking / non-thinking switches and thinking
budget on a fused cold start, and AdaptThink's RL that answers directly where that stays right.

Qwen3 (Qwen Team 2025, arXiv 2505.09388, sec. 4.3, Thinking Mode Fusion): continued SFT on
thinking and non-thinking data, marked by ``/think`` and ``/no_think`` at the end of the user's
turn (an empty ``<think></think>`` in non-thinking answers), gives one model that obeys the
switch; and a thinking budget: cut the thought when it reaches the budget, close it, let the
model answer; "this ability is not explicitly trained", and accuracy grows with the budget
(its fig. of performance against thinking budget). AdaptThink (Zhang et al. 2025, arXiv
2505.13417): RL with the objective  E[ R(x, y) - R_ref(x) + delta 1(y opens with </think>) ]
(maximise no-thinking answers under the constraint that accuracy does not fall below the
reference's; delta = 0.05 in its main runs) teaches a thinking model to skip the thought on easy
prompts and keep it on hard ones, with shorter answers and accuracy kept.

The toy. ``tiny-fused`` (``scripts/make_fused_checkpoint.py``; its card): continued SFT of
``tiny-graded`` with a third of the prompts ending in `` /think`` (target: graded's running-sum
thought), a third in `` /no_think`` (target: ``<think></think><answer>..``) and a third without a
switch (a thought half the time, in every cell alike), the two easiest cells (``2x1``, ``3x1``)
given four more no-switch targets per prompt (still half thoughts), so that their direct
answers without a switch are learned (the script's docstring: what was tried). Three arms on
the same seeds:
  cold start  no training: held-out probes of tiny-fused under each switch, and the budget probe
              (hard cells under /think; thoughts cut at B = 0..3 steps, ``fused.budget_cells``);
              its seeds are sampling seeds only
  acc only    GRPO without a switch (the plain ``graded`` prompts), r = answer_match
  adaptive    the same with r = answer_match + DELTA correct_no_thought (1 for a right answer
              with an empty thought)
GRPO as lab 90's graded runs (``r1_zero.SETUP``: 16 prompts x G = 4, lr 5e-4, mu = 1, beta = 0,
the task's 97 tokens), 60 steps. Held-out: every held-out prompt (128 a cell, 20 for ``2x1``),
one sample each at T = 1, the run's seed, under each switch; "before" is the cold start probed
with the same seed. Hard: the two-digit cells; easy: the one-digit ones (``cells.HARD``, ``EASY``).

Departures from AdaptThink, and why the effect can happen here. AdaptThink's advantage is not
normalised and its delta is paid to every no-thinking answer; GRPO divides by the group's spread,
which would turn a correctness-blind delta into a full-size push to stop thinking in every group
that is all wrong (the prompts too hard to solve: the opposite of adaptive; lab 34 saw a small
fixed length penalty act as a large one under GRPO). So the bonus is paid to right answers only:
a group all right with both modes in it pushes to the empty thought (the same normalisation makes
the small delta a full-size push there); a group all wrong is not pushed; in a mixed group
accuracy leads. AdaptThink's importance sampling (half the samples forced to open with
``</think>``) is not needed: the fused start answers either way on every prompt without a switch.

The effect needs prompts whose direct answers are about as reliable as a thought, and the first
``tiny-fused`` had none: its direct answers were right about half the time on every one-digit
cell, so both arms learned to think everywhere and the first stored run found every AdaptThink
claim inconclusive (a limit of the toy). The rebuilt cold start was judged on its card alone,
before any RL ran: without a switch its direct answers on ``2x1`` (the card's ``pass | direct``)
come near its thoughts there (on ``3x1`` they rose but stay well below), so groups of four on
``2x1`` often come out all right with both modes in them, where the bonus pushes; on the
two-digit cells a direct answer is almost never right and a thought is (``2x2``), so groups
holding a direct answer are mixed and accuracy pushes to thinking. The rules below are the
first run's: none was written around the old toy's limit, so none changed. What would falsify
it: the think rate falls as much on the hard cells as on the easy ones (no larger gap than acc
only), the easy cells' think rate does not fall below acc only's, or the hard cells lose
accuracy. ``easy`` pools all four one-digit cells; direct answers are reliable on ``2x1`` only
(better on ``3x1``), so a bonus that works there moves the pooled rate by a fraction as much.
The thinking budget can show because a cut thought ends in a running sum that is nearer the
answer the more steps it holds; the policy was never trained to answer from a cut thought
(Qwen3's claim is that this emerges); it fails if the answer ignores the partial thought (no
gain from B = 0 to 1). Obedience after RL: Qwen3's later RL stages keep training the switches;
here RL never shows one, a harder test.

Budget (``python scripts/run_experiment.py adaptive_think --workers 2``): 5 seeds x (cold start
+ 2 GRPO arms x 60 steps). Pilot, for timing only (seed 100, the adaptive arm for 3 steps and the
cold start's probes, full sizes, one thread; run on the first tiny-fused while the rebuild was
training, whose no-switch think share and answer lengths are the same by construction): the
machine was loaded (load average ~8 on 2 cores, wall ~6x the process's CPU time), so ``PILOT``
gives CPU seconds, the uncontended one-thread figure. A GRPO run 60 x 2.0 + 21 (held-out under
three switches) + 7.5 (its "before", once a process and seed) + ~5 set-up ~ 155 s, 10 of them
~1,550 s; a cold-start run 21 (three switches) + 21 (budget) ~ 41 s, 5 of them ~205 s. About
1,750 s of one-thread work: ~15 min on two workers (the first stored run took 892 s), more with
this machine's noise.
"""

from __future__ import annotations

import functools

import pandas as pd

from labkit.experiments.arms import grpo_run
from labkit.experiments.cells import changes
from labkit.experiments.claims import Claim
from labkit.experiments.fused import LABELS, budget_stats, switch_cells, switch_stats
from labkit.experiments.harness import Experiment, Outcome
from labkit.experiments.r1_zero import SETUP, thinks
from labkit.models.policy import load_policy
from labkit.tasks.arithmetic import parse_int
from labkit.tasks.scratchpad import parse

CLAIM = (
    "Qwen3 (arXiv 2505.09388, sec. 4.3): a model fused by SFT on /think and /no_think data obeys "
    "the switch, and with a thinking budget (the thought cut at B, then an answer) its accuracy "
    "grows with B. AdaptThink (arXiv 2505.13417): RL that adds a bonus delta for answering without "
    "a thought, under an accuracy constraint, learns to think on hard prompts only, with shorter "
    "answers and accuracy kept. On the graded toy: tiny-fused probed under each switch and budget; "
    "GRPO without a switch, accuracy alone vs accuracy + delta for a right answer with no thought."
)
MODEL = "tiny-fused"
DELTA = 0.05
"""The no-thinking bonus (AdaptThink's delta in its main runs), paid to right answers only."""
BUDGETS = (0, 1, 2, 3)
"""Thought steps kept by the budget probe (2x2's thought has 2 steps, 3x2's 4)."""
HELDOUT = {"full": 128, "fast": 8}
"""Held-out prompts per cell (all of them at 128; 2x1 has 20), one sample each at T = 1."""
BUDGET_PROBE = {"full": (128, 2), "fast": (4, 1)}
"""Budget probe: (prompts per hard cell, samples per prompt)."""
OBEY_MARGIN, AFTER_RL_MARGIN, ACC_MARGIN = 0.05, 0.1, 0.05
"""Equivalence margins: a switch's disobedience at the cold start and after RL; accuracy."""
COLD, ACC, ADAPTIVE = "cold start", "acc only", "adaptive"
ARMS = {COLD: {"delta": None}, ACC: {"delta": 0.0}, ADAPTIVE: {"delta": DELTA}}
"""Arm -> the no-thinking bonus (None: no training, probes only)."""
PILOT = {
    "GRPO CPU s/step (adaptive arm; the first with set-up)": (7.2, 2.0, 1.5),
    "held-out probes under three switches, CPU s": (22.7, 19.8),
    "no-switch probe (an RL run's before), CPU s": 7.5,
    "budget probe, CPU s": 21.3,
    "cold-start arm, CPU s (wall s)": (41.1, 248.8),
    "load average": 8.6,
}
"""The timing pilot (seed 100, one thread, CPU seconds of a loaded machine: module docstring)."""


def correct_no_thought(completions: list[str], answer: list[str], **kwargs) -> list[float]:
    """1.0 for a right answer with an empty (or no) thought: what the bonus pays for.

    >>> correct_no_thought(["<think></think><answer>8</answer>", "<answer>8</answer>",
    ...                     "<think>3+5=8</think><answer>8</answer>",
    ...                     "<think></think><answer>9</answer>"], answer=["8"] * 4)
    [1.0, 1.0, 0.0, 0.0]
    """
    out = []
    for c, a in zip(completions, answer):
        p = parse(c)
        out.append(float(p.well_formed and not p.think and parse_int(p.answer) == int(a)))
    return out


@functools.lru_cache(maxsize=8)
def cold_free(per_cell: int, seed: int) -> dict:
    """The shipped ``tiny-fused``'s held-out stats without a switch (``"<stat> (<cell>) no
    switch"``, :func:`~labkit.experiments.fused.switch_cells`): an RL run's "before", probed
    once a process per seed."""
    stats = switch_cells(*load_policy(MODEL), "none", per_cell=per_cell, seed=seed)
    return {f"{k} {LABELS['none']}": v for k, v in stats.items()}


def gap(stats: dict, when: str) -> float:
    """Think rate on the hard cells minus on the easy ones (no switch).

    >>> gap({"think (hard) after": 0.9, "think (easy) after": 0.3}, "after")
    0.6
    """
    return round(stats[f"think (hard) {when}"] - stats[f"think (easy) {when}"], 12)


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed: the cold start's probes, or GRPO without a switch from tiny-fused
    and held-out stats before (the cold start, this seed) and after."""
    mode = "fast" if fast else "full"
    per_cell = HELDOUT[mode]
    if settings["delta"] is None:
        model, tok = load_policy(MODEL)
        summary = switch_stats(model, tok, per_cell=per_cell, seed=seed)
        summary |= budget_stats(model, tok, BUDGETS, *BUDGET_PROBE[mode], seed=seed)
        tick(steps, steps)
        return Outcome(summary, pd.DataFrame({"step": []}))
    trainer = grpo_run(
        MODEL,
        {},
        seed=seed,
        steps=steps,
        run_name=run_name,
        tick=tick,
        reward_funcs=["answer_match", correct_no_thought, thinks],
        reward_weights=[1.0, settings["delta"], 0.0],
        task="graded",
        track_kl=False,
        save_steps=max(1, steps // 3),
        **{**SETUP, "max_completion_length": None},
    )
    after = switch_stats(trainer.model, trainer.tokenizer, per_cell=per_cell, seed=seed)
    trainer.log.close()  # the run is done: its folder is free for a later resume
    return Outcome(rl_summary(cold_free(per_cell, seed), after), trainer.log.metrics)


def rl_summary(cold: dict, after: dict) -> dict:
    """An RL run's summary: the no-switch stats before (the cold start), after and their gain;
    the switches' stats after (``"<stat> (<cell>) /think after"``, ``"disobey /think after"``);
    the think gap (hard - easy) before and after.

    >>> cold = {"think (hard) no switch": 0.5, "think (easy) no switch": 0.5}
    >>> s = rl_summary(cold, {"think (hard) no switch": 0.9, "think (easy) no switch": 0.4,
    ...                       "disobey /think": 0.1})
    >>> round(s["think (easy) gain"], 6), s["think gap after"], s["disobey /think after"]
    (-0.1, 0.5, 0.1)
    """
    free = lambda d: {k[: -len(" no switch")]: v for k, v in d.items() if k.endswith("no switch")}
    summary = changes(free(cold), free(after))
    summary |= {f"{k} after": v for k, v in after.items() if not k.endswith("no switch")}
    return summary | {f"think gap {w}": gap(summary, w) for w in ("before", "after")}


QWEN3 = "Qwen3 Technical Report (Qwen Team 2025, arXiv 2505.09388)"
ADAPT = "AdaptThink (Zhang et al. 2025, arXiv 2505.13417)"
HELD = "Held-out, every prompt (128 a cell, 20 for 2x1), one sample at T = 1."
CLAIMS = (
    Claim(
        "no-think-obeyed",
        "under /no_think the fused model answers without a thought",
        f"{QWEN3} sec. 4.3 (Thinking Mode Fusion: the /no_think flag)",
        metric="disobey /no_think",
        arm=COLD,
        direction=0,
        margin=OBEY_MARGIN,
        note=f"Share of /no_think answers with a non-empty thought, tiny-fused. {HELD}",
    ),
    Claim(
        "think-obeyed",
        "under /think the fused model thinks",
        f"{QWEN3} sec. 4.3 (the /think flag)",
        metric="disobey /think",
        arm=COLD,
        direction=0,
        margin=OBEY_MARGIN,
        note=f"Share of /think answers without a thought, tiny-fused. {HELD}",
    ),
    Claim(
        "budget-partial",
        "an answer from a thought cut at one step beats one from no thought (hard prompts)",
        f"{QWEN3} sec. 4.3 (thinking budget: an answer from the incomplete thought; not "
        "trained, it emerges from the fusion)",
        metric="pass (hard): B=1 - B=0",
        arm=COLD,
        note="Two-digit cells under /think, 128 prompts a cell x 2 samples; the same first "
        "samples cut at each budget (paired within the seed).",
    ),
    Claim(
        "budget-grows",
        "accuracy on hard prompts grows with the thinking budget",
        f"{QWEN3} sec. 4.3 and its figure of performance against thinking budget",
        metric="budget slope (hard)",
        arm=COLD,
        note="Least-squares slope of the hard cells' pass rate over B = 0, 1, 2, 3 steps.",
    ),
    Claim(
        "adaptive-gap",
        "the no-thinking bonus makes the policy think on hard prompts more than on easy ones",
        f"{ADAPT} (NoThinking chosen more often the easier the problem: its per-level results)",
        metric="think gap after",
        arm=ADAPTIVE,
        baseline=ACC,
        note="Think rate on the two-digit cells minus on the one-digit ones, no switch, after "
        f"RL. {HELD}",
    ),
    Claim(
        "adaptive-easy",
        "... by thinking less on the easy prompts",
        f"{ADAPT} (the NoThinking ratio is highest on the easiest problems)",
        metric="think (easy) after",
        arm=ADAPTIVE,
        baseline=ACC,
        direction=-1,
        note=HELD,
    ),
    Claim(
        "adaptive-shorter",
        "the no-thinking bonus makes answers shorter",
        f"{ADAPT} (average response length cut by about half on its math sets)",
        metric="length (all) after",
        arm=ADAPTIVE,
        baseline=ACC,
        direction=-1,
        note=f"Mean characters per answer, no switch. {HELD}",
    ),
    Claim(
        "adaptive-hard-accuracy",
        "... keeping accuracy on the hard prompts",
        f"{ADAPT} (the constraint: accuracy not below the reference's)",
        metric="pass (hard) after",
        arm=ADAPTIVE,
        baseline=ACC,
        direction=0,
        margin=ACC_MARGIN,
        note=HELD,
    ),
    Claim(
        "adaptive-accuracy",
        "... and overall",
        f"{ADAPT} (accuracy kept or raised while length falls)",
        metric="pass (all) after",
        arm=ADAPTIVE,
        baseline=ACC,
        direction=0,
        margin=ACC_MARGIN,
        note=HELD,
    ),
    Claim(
        "no-think-after-rl",
        "/no_think is still obeyed after RL that never showed a switch",
        f"{QWEN3} sec. 4.3-4.4 (the fused model's switches kept through its last RL stage, "
        "which trains them; here RL does not)",
        metric="disobey /no_think after",
        arm=ADAPTIVE,
        direction=0,
        margin=AFTER_RL_MARGIN,
        note=HELD,
    ),
    Claim(
        "think-after-rl",
        "/think is still obeyed after RL that rewards not thinking",
        f"{QWEN3} sec. 4.3-4.4 (as above)",
        metric="disobey /think after",
        arm=ADAPTIVE,
        direction=0,
        margin=AFTER_RL_MARGIN,
        note=HELD,
    ),
)

EXPERIMENT = Experiment(
    name="adaptive_think",
    lab="98_adaptive_thinking",
    arms=ARMS,
    train=train,
    steps=60,
    claims=CLAIMS,
    curves=(
        "accuracy",
        "len/mean",
        "rewards/thinks/mean",
        "rewards/correct_no_thought/mean",
    ),
    live={"arms": [COLD, ACC, ADAPTIVE], "seeds": (0, 1), "steps": 25},
)
