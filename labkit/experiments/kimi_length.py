"""Kimi k1.5's length reward and long2short DPO on the graded task: shorter answers at equal
accuracy, by cutting redundant steps?

Kimi k1.5 (Kimi Team 2025, arXiv 2501.12599). Sec. 2.3.3: within the k samples of a prompt,
    lambda_i = 0.5 - (len_i - min_len) / (max_len - min_len)     (all lengths equal: 0)
    len_reward_i = lambda_i if correct_i else min(0, lambda_i)
(``labkit.rewards.reasoning.kimi_length``, checked against the paper's formula), "added to the
original reward with a weighting parameter", and warmed up: "standard policy optimization without
length penalty, followed by a constant length penalty for the rest of training". Sec. 2.4,
long2short DPO: the long-CoT model samples several answers per prompt, "the shortest correct
solution is selected as the positive sample, while longer responses are treated as negative".

The toy: GRPO on ``graded`` from ``tiny-graded`` (lab 90's set-up, ``r1_zero.SETUP``: 16 prompts
x G = 4, lr 5e-4, mu = 1, beta = 0, the task's 97 tokens, 60 steps), five seeds. Why the effect
can happen here: a correct thought's length grows with the cell (one step per place value), a
thought pays on some cells (the card: on 2x2 forcing a thought gives 0.39 accuracy against 0.01
for a direct answer) and not on others (5x1), and the cold start re-checks steps (a step written
twice, ``graded_steps``' ``redundant``) in 11-36 % of its thoughts on most cells: length that no
answer needs, so a length reward can shorten correct answers without dropping the thought. What
would falsify it: the length arms end shorter only by answering directly (think rate down, re-checks
per thought unchanged) and lose the accuracy thinking bought; long2short's pairs teach nothing
(re-checks per thought unchanged).

Arms, on the same seeds (settings fixed before any run; the pilot below looked only at time):
  acc         r = answer_match                                     (the reference)
  acc + kimi  r = answer_match + W kimi_length, the length term 0 for the first third of the
              steps (Kimi's warm-up: until then its rewards are the acc run's)
  acc + plain r = answer_match + W (-len / L_max), L_max = 97 characters, same warm-up: a length
              penalty blind to correctness and to the group, for contrast
  long2short  DPO from the SAME seed's acc policy (its final checkpoint: the acc arm's run, read
              back; trained in that run's folder if it is missing, waited for if another worker
              is training it), on that policy's own samples: ``long2short.PAIR_PROMPTS``
              training prompts x 8 samples at T = 1; per prompt, the shortest correct answer
              WITH a thought chosen, every longer correct answer with a thought rejected
              (thought-vs-thought); :mod:`labkit.experiments.long2short` does it.
W = 0.5: a correct answer always outscores a wrong one (1 + W lambda >= 0.75 > 0 >= W min(0,
lambda)), and the length term's spread within a group is half the accuracy term's. Warm-up a
third of the run: the paper gives no length; a third leaves two thirds with the penalty.
DPO: beta 0.1, lr 3e-5, 32 pairs a step (``DPOConfig``'s defaults; 5e-5 collapses the tiny
policy), ``long2short.PASSES`` passes over the pairs, at most half as many steps as the RL runs
(30).

Revised after the first stored run (commit 792962b, disclosed in lab 92): it sampled 256
prompts and took 30 DPO steps whatever the pair count, meant as "a few passes over a few hundred
pairs"; but the RL policy rarely re-checks, so 2,048 samples gave only 19-45 pairs a seed and 30
steps passed over each 20-50 times (long2short shorter: reproduced; keeps accuracy: not
reproduced). Now 2,048 prompts (~8x the pairs at that rate) and ``long2short.PASSES`` passes, as
the design meant; the claims and their rules are unchanged, the GRPO arms' runs are the same.

Departures from the paper. Kimi's DPO negatives also include wrong longer answers, and correct
ones only when 1.5x longer than the chosen: here a re-check adds 6-10 characters to a 30-70
character answer, so the 1.5x rule would keep hardly any re-check pair, and wrong answers are left
out so that a pair differs in length only. Prompts where the policy answers directly give no pair
(a direct answer is never chosen, never rejected): a pair never teaches "stop thinking", which on
``scratchpad`` was all it taught (lab 92's first version). Kimi measures response tokens; here
characters (one a token on the tiny policy). Long2short RL (sec. 2.4's fourth method) is not run.

Summaries: held-out per cell (128 prompts a cell, 20 for 2x1, one sample each at T = 1, the run's
seed; :func:`~labkit.experiments.cells.heldout_cells` with ``extra``): pass rate, think rate,
length, length of correct answers, re-checks per thought; before (the cold start, ``PROBE_SEED``)
and after; ``(pool)``: the cells weighted equally as the training pool draws them. long2short
adds its pairs' count and the re-checks and lengths of chosen and rejected answers.

Budget (``python scripts/run_experiment.py kimi_length --workers 2``): 5 seeds x (3 GRPO arms x
60 steps + DPO 30 steps). Pilot, for timing only (seed 100, 3 steps of the kimi arm and of
long2short with its acc stage, full probes, one thread, load average 6-7.5 on the 2 cores from
other jobs, so about 2.3x slow against lab 90's uncontended 1.9 s a GRPO step): ``PILOT``.
Scaled to an idle core: a GRPO run 60 x 1.9 + ~10 s (held-out probe, set-up) ~ 124 s, 15 of
them ~1,860 s; a long2short run ~19 s of pair sampling + 30 x ~1.2 s of DPO + ~8 s ~ 63 s, 5 of
them ~315 s; the cold-start probe ~8 s once a worker. About 2,200 s of one-thread work: ~18 min
on two workers, more with the step-time noise this machine shows. That was the first version's
budget: since the revision a long2short run samples 8x the prompts (~150 s of pair sampling at
the pilot's rate) and takes ``long2short.dpo_steps`` steps; the stored result's meta has the
wall time of the call that made it.
"""

from __future__ import annotations

import pandas as pd

from labkit.experiments.arms import grpo_run
from labkit.experiments.cells import STATS, changes, cold_start_cells, heldout_cells
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, Outcome
from labkit.experiments.lagrange import pool_mean
from labkit.experiments.long2short import ACC, dpo_arm, rechecks
from labkit.experiments.r1_zero import SETUP, thinks
from labkit.rewards.call import reward_name
from labkit.rewards.reasoning import kimi_length

CLAIM = (
    "Kimi k1.5 (arXiv 2501.12599, sec. 2.3.3 and 2.4): a length reward within each group "
    "(lambda = 0.5 - (len - min_len)/(max_len - min_len); correct answers get lambda, wrong "
    "ones min(0, lambda)), warmed up after plain RL, and long2short DPO on the RL policy's own "
    "samples (shortest correct answer chosen over longer correct ones) make answers shorter at "
    "about the same accuracy. On the graded toy, whose thoughts carry redundant re-checks: GRPO "
    "from tiny-graded with accuracy alone, + Kimi's reward, + a plain length penalty; and DPO "
    "from each seed's accuracy-only policy on its thought-vs-thought pairs."
)
MODEL = "tiny-graded"
W = 0.5
"""Weight of a length reward next to the accuracy reward (1.0): module docstring."""
WARMUP = 1 / 3
"""Share of the steps run without the length term (Kimi's warm-up)."""
L_MAX = 97
"""The plain penalty's scale: the task's completion limit (characters, one a token)."""
MARGIN = 0.05
"""'About the same': held-out pass rate (pool) within this of the acc arm's: 2.5x the probe's
own sampling s.e. of that rate (~0.02 over 660 samples), a few points as Kimi's tables."""
THINK_MARGIN = 0.05
"""long2short 'keeps thinking' on the hard cells: think rate within this of its RL policy's."""
PROBE_SEED = 1000
"""The cold-start probe's sampling seed: one "before" for every run, apart from the seeds."""
HELDOUT = {"full": 128, "fast": 8}
"""Held-out prompts per cell (all of them at 128; 2x1 has 20), one sample each at T = 1."""
KIMI, PLAIN, L2S = "acc + kimi", "acc + plain", "long2short"
PILOT = {
    "GRPO s/step (kimi arm)": (5.69, 4.0, 3.74),
    "DPO s/step": (2.92, 2.53),
    "pairs sampling s (256 prompts x 8)": 42.1,
    "held-out probe s": 14.5,
    "cold-start probe s": 17.4,
    "load average": (6.4, 7.6),
}
"""The timing pilot (seed 100, one thread, a loaded machine: module docstring)."""


def plain_length(completions: list[str], **kwargs) -> list[float]:
    """A plain length penalty: -len / L_MAX (characters), correct or not.

    >>> plain_length(["x" * 97, ""])
    [-1.0, 0.0]
    """
    return [-len(c) / L_MAX for c in completions]


class WarmedUp:
    """``fn``'s reward from training step ``start`` on, 0 before it (Kimi's warm-up: plain RL,
    then a constant length penalty); a call without ``trainer_state`` scores as after it.

    >>> from labkit.rewards.kwargs import TrainerState
    >>> f = WarmedUp(plain_length, 2)
    >>> f(["xx"], trainer_state=TrainerState(global_step=1)), f.__name__
    ([0.0], 'plain_length')
    """

    def __init__(self, fn, start: int):
        self.fn, self.start, self.__name__ = fn, start, reward_name(fn)

    def __call__(self, completions, trainer_state=None, **kwargs):
        if trainer_state is not None and trainer_state.global_step < self.start:
            return [0.0] * len(completions)
        return self.fn(completions, **kwargs)


ARMS = {
    ACC: {"kind": "grpo", "length": None},
    KIMI: {"kind": "grpo", "length": "kimi_length"},
    PLAIN: {"kind": "grpo", "length": "plain_length"},
    L2S: {"kind": "dpo"},
}
"""Arm -> GRPO with its length reward (None: accuracy alone), or DPO from the acc policy.
Long2short comes last: the harness sends a seed's arms in this order, so with two workers the
acc run of its seed has finished when it starts."""


def grpo_arm(arm: str, *, seed: int, steps: int, run_name: str, tick, policy: str = MODEL):
    """The GRPO run of ``arm`` from the cold start ``policy`` (resumed from its checkpoints when
    it has some)."""
    length = ARMS[arm]["length"]
    funcs, weights = ["answer_match"], [1.0]
    if length is not None:
        fn = kimi_length if length == "kimi_length" else plain_length
        funcs, weights = [*funcs, WarmedUp(fn, round(steps * WARMUP))], [1.0, W]
    return grpo_run(
        policy,
        {},
        seed=seed,
        steps=steps,
        run_name=run_name,
        tick=tick,
        reward_funcs=[*funcs, thinks, rechecks],
        reward_weights=[*weights, 0.0, 0.0],
        task="graded",
        track_kl=False,
        save_steps=max(1, steps // 3),
        **{**SETUP, "max_completion_length": None},
    )


def with_pool(stats: dict) -> dict:
    """``stats`` and the pool-weighted (cells equally) pass, think and length."""
    return stats | {f"{s} (pool)": pool_mean(stats, s) for s in STATS}


def train(
    arm: str,
    settings: dict,
    *,
    seed: int,
    steps: int,
    fast: bool,
    run_name: str,
    tick,
    policy: str = MODEL,
    pair_prompts: dict | None = None,
):
    """One arm on one seed from the cold start ``policy``; held-out stats per cell before (the
    cold start) and after. Another experiment passes its own ``policy`` and long2short's
    ``pair_prompts`` (``kimi_recheck``; default ``long2short.PAIR_PROMPTS``)."""
    per_cell = HELDOUT["fast" if fast else "full"]
    cold = with_pool(cold_start_cells(policy, per_cell, PROBE_SEED, extra=True))
    extra: dict = {}
    if settings["kind"] == "dpo":
        trainer, model, tok, extra = dpo_arm(
            seed=seed,
            steps=steps,
            fast=fast,
            run_name=run_name,
            tick=tick,
            model_name=policy,
            pair_prompts=pair_prompts,
            train_acc=lambda acc_run: grpo_arm(
                ACC,
                seed=seed,
                steps=steps,
                run_name=acc_run,
                tick=lambda d, t: None,
                policy=policy,
            ),
        )
    else:
        trainer = grpo_arm(arm, seed=seed, steps=steps, run_name=run_name, tick=tick, policy=policy)
        model, tok = trainer.model, trainer.tokenizer
    after = with_pool(heldout_cells(model, tok, per_cell=per_cell, seed=seed, extra=True))
    curves = pd.DataFrame({"step": []}) if trainer is None else trainer.log.metrics
    if trainer is not None:
        trainer.log.close()  # the run is done: its folder is free for a later resume
    return Outcome(changes(cold, after) | extra, curves)


SOURCE = "Kimi k1.5 (Kimi Team 2025, arXiv 2501.12599)"
POOL = "Held-out, one sample a prompt at T = 1, the six cells weighted equally."
CLAIMS = (
    Claim(
        "kimi-shorter",
        "Kimi's length reward makes answers shorter than accuracy alone",
        f"{SOURCE} sec. 2.3.3 (the length reward restrains the growth of response length; "
        "token efficiency is average response length)",
        metric="length (pool) after",
        arm=KIMI,
        baseline=ACC,
        direction=-1,
        note=f"Mean characters per answer. {POOL}",
    ),
    Claim(
        "kimi-shorter-correct",
        "... and shortens correct answers where a thought pays (2x2)",
        f"{SOURCE} sec. 2.3.3 (shorter responses promoted among correct ones)",
        metric="length correct (2x2) after",
        arm=KIMI,
        baseline=ACC,
        direction=-1,
        note="Mean characters per correct 2x2 answer (a seed without one is left out). Shorter "
        "by dropping the thought would show as a fall in think (2x2) and pass (2x2).",
    ),
    Claim(
        "kimi-rechecks",
        "... by cutting redundant re-checks from the thoughts",
        f"{SOURCE} sec. 2.3.3 (the overthinking the penalty targets); the toy's re-checks",
        metric="rechecks (all) after",
        arm=KIMI,
        baseline=ACC,
        direction=-1,
        note="Re-checks per thought, over every held-out thought.",
    ),
    Claim(
        "kimi-accuracy",
        "Kimi's length reward keeps accuracy",
        f"{SOURCE} sec. 2.3.3 (the penalty's stated cost is slower early training, which the "
        "warm-up avoids)",
        metric="pass (pool) after",
        arm=KIMI,
        baseline=ACC,
        direction=0,
        margin=MARGIN,
        note=POOL,
    ),
    Claim(
        "kimi-vs-plain",
        "Kimi's reward keeps more accuracy than a plain length penalty of the same weight",
        f"{SOURCE} sec. 2.3.3 (its design: length ranked among correct answers; a wrong "
        "answer never rewarded for being short): the design's reason, not a measured claim",
        metric="pass (pool) after",
        arm=KIMI,
        baseline=PLAIN,
        note=POOL,
    ),
    Claim(
        "l2s-shorter",
        "long2short DPO makes its RL policy's answers shorter",
        f"{SOURCE} sec. 2.4 (DPO: shortest correct answer chosen), sec. 3.4 and fig. 7 "
        "(token efficiency: average tokens)",
        metric="length (pool) after",
        arm=L2S,
        baseline=ACC,
        direction=-1,
        note=f"DPO starts from the acc arm's final policy of the same seed. {POOL}",
    ),
    Claim(
        "l2s-rechecks",
        "... by cutting redundant re-checks from the thoughts",
        f"{SOURCE} sec. 2.4; the toy's re-checks (what a thought-vs-thought pair differs by)",
        metric="rechecks (all) after",
        arm=L2S,
        baseline=ACC,
        direction=-1,
        note="Re-checks per thought, over every held-out thought.",
    ),
    Claim(
        "l2s-accuracy",
        "long2short DPO keeps its RL policy's accuracy",
        f"{SOURCE} sec. 3.4, fig. 7 (the long2short models keep most of the long model's accuracy)",
        metric="pass (pool) after",
        arm=L2S,
        baseline=ACC,
        direction=0,
        margin=MARGIN,
        note=POOL,
    ),
    Claim(
        "l2s-thinks",
        "long2short DPO keeps thinking where a thought pays (the two-digit cells)",
        f"{SOURCE} sec. 2.4 (a short-CoT model that keeps reasoning); the pairs' design",
        metric="think (hard) after",
        arm=L2S,
        baseline=ACC,
        direction=0,
        margin=THINK_MARGIN,
        note="Think rate on 2x2 and 3x2. Pairs are thought against thought only.",
    ),
)

EXPERIMENT = Experiment(
    name="kimi_length",
    lab="92_kimi_length_penalty",
    arms=ARMS,
    train=train,
    steps=60,
    claims=CLAIMS,
    curves=(
        "accuracy",
        "len/mean",
        "len/correct",
        "rewards/thinks/mean",
        "rewards/rechecks/mean",
        "rewards/kimi_length/mean",
        "rewards/plain_length/mean",
        "loss",
        "rewards/margins",
        "rewards/accuracies",
    ),
    live={"arms": [ACC, KIMI], "seeds": (0, 1), "steps": 30},
)
"""Kimi's length reward and long2short (labkit.experiments.kimi_length): the warm-up and the
pairs do what the docstring says, the claims name real arms and summary columns. The runs: lab
92's live cell in fast mode and the stored result."""
