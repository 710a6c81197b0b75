"""Kimi k1.5's length penalty and long2short: shorter correct answers at equal accuracy?

Kimi k1.5 (Kimi Team 2025, arXiv 2501.12599, sec. 2.3.3): within a prompt's group of k samples,
    lambda_i = 0.5 - (len_i - min_len) / (max_len - min_len)
    len_reward_i = lambda_i if correct_i else min(0, lambda_i)
(``labkit.rewards.reasoning.kimi_length``), added to the accuracy reward; and long2short
(sec. 2.4): DPO with the shortest correct answer as chosen and a longer correct one as rejected
(``pair_mode="long2short"``, ``labkit.algos.pairs.rank_pairs``).

Five arms from the thinking cold start ``tiny-think`` on ``scratchpad``, same seeds and budget:
  cold start      no training: ``tiny-think`` itself, probed (what DPO starts from)
  acc             GRPO, r = answer_match                               (the reference)
  acc + kimi      GRPO, r = answer_match + W * kimi_length
  acc + plain     GRPO, r = answer_match + W * plain_length (-len / L_max for every answer)
  DPO long2short  DPO on pairs sampled from tiny-think (8 per prompt), as many steps
GRPO uses lab 90's setup (``labkit.experiments.r1_zero.SETUP``). On this toy the shortest
correct answer is a direct one (``<answer>25</answer>``, 19 chars vs ~60 with a thought), so
shortening can mean not thinking.

Departure: Kimi applies long2short to its long-CoT RL model and compares with it; here DPO starts
from the cold start and is judged against it, and its pairs mostly prefer a direct answer over a
correct thought with the same answer.
"""

from __future__ import annotations

import random

import pandas as pd
import torch

from labkit.algos.dpo import DPOTrainer
from labkit.algos.pairs import rank_pairs
from labkit.experiments.arms import grpo_run
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, Outcome, resume_or_start
from labkit.experiments.r1_zero import CURVES, HELDOUT, METRICS, SETUP, heldout
from labkit.models.policy import load_policy
from labkit.models.rollout import rollout
from labkit.runs import checkpoint
from labkit.runs.log import runs_root
from labkit.tasks import get_task

CLAIM = (
    "Kimi k1.5 (arXiv 2501.12599, sec. 2.3.3 and 2.4): a length reward within each group "
    "(lambda = 0.5 - (len - min_len)/(max_len - min_len); correct answers get lambda, wrong "
    "ones min(0, lambda)) and long2short DPO (shortest correct answer chosen over a longer "
    "correct one) make correct answers shorter at (nearly) equal accuracy."
)
W = 0.5
"""Weight of the length rewards next to the accuracy reward (1.0)."""
MARGIN = 0.05
"""'Equal accuracy': within this much held-out accuracy of the comparison arm."""
PAIR_PROMPTS = {"full": 512, "fast": 16}
"""Training prompts sampled (8 completions each) for the long2short pairs."""


def plain_length(completions: list[str], **kwargs) -> list[float]:
    """A plain length penalty: -len / L_max (characters), correct or not.

    >>> plain_length(["x" * 36, ""])
    [-0.5, 0.0]
    """
    return [-len(c) / SETUP["max_completion_length"] for c in completions]


ARMS = {
    "cold start": {"kind": "probe"},
    "acc": {"kind": "grpo", "rewards": ["answer_match"], "weights": [1.0]},
    "acc + kimi": {"kind": "grpo", "rewards": ["answer_match", "kimi_length"], "weights": [1.0, W]},
    "acc + plain": {
        "kind": "grpo",
        "rewards": ["answer_match", "plain_length"],
        "weights": [1.0, W],
    },
    "DPO long2short": {"kind": "dpo"},
}
"""Arm -> what it runs; GRPO arms name their reward functions (``plain_length`` is this
module's) and weights."""


@torch.no_grad()
def long2short_pairs(n_prompts: int, seed: int = 0, G: int = 8) -> list[dict]:
    """Pairs (shortest correct chosen, a longer correct rejected) from ``G`` samples of
    ``tiny-think`` on ``n_prompts`` training prompts, at ``SETUP``'s completion length."""
    model, tok = load_policy("tiny-think")
    task = get_task("scratchpad")
    ex = random.Random(seed).sample(task.train, n_prompts)
    b = rollout(
        model,
        tok,
        [e.prompt for e in ex for _ in range(G)],
        SETUP["max_completion_length"],
        temperature=1.0,
        generator=torch.Generator().manual_seed(seed),
    )
    pairs = []
    for k, e in enumerate(ex):
        outs = b.completions[k * G : (k + 1) * G]
        pairs += rank_pairs(e.prompt, outs, [task.verify(c, e.answer) for c in outs], "long2short")
    return pairs


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed, summarised by its held-out stats (one sample per prompt, T = 1)."""
    size = "fast" if fast else "full"
    if settings["kind"] == "probe":
        tick(steps, steps)
        stats = heldout(*load_policy("tiny-think"), n=HELDOUT[size], seed=seed)
        return Outcome(stats, pd.DataFrame({"step": []}))
    if settings["kind"] == "dpo":
        trainer = dpo_run(
            seed=seed, steps=steps, run_name=run_name, tick=tick, n_prompts=PAIR_PROMPTS[size]
        )
    else:
        funcs = [plain_length if f == "plain_length" else f for f in settings["rewards"]]
        trainer = grpo_run(
            "tiny-think",
            {"reward_weights": [*settings["weights"], *[0.0] * len(METRICS)]},
            seed=seed,
            steps=steps,
            run_name=run_name,
            tick=tick,
            reward_funcs=[*funcs, *METRICS],
            task="scratchpad",
            track_kl=False,
            save_steps=max(1, steps // 3),
            **SETUP,
        )
    stats = heldout(trainer.model, trainer.tokenizer, n=HELDOUT[size], seed=seed)
    trainer.log.close()  # the run is done: its folder is free for a later resume
    return Outcome(stats, trainer.log.metrics)


def dpo_run(*, seed: int, steps: int, run_name: str, tick, n_prompts: int) -> DPOTrainer:
    """DPO from ``tiny-think`` on long2short pairs of ``n_prompts`` prompts sampled with
    ``seed`` (resumed from its checkpoints, which keep the pairs, when it has some)."""
    resuming = bool(checkpoint.steps(runs_root() / run_name))
    pairs = None if resuming else long2short_pairs(n_prompts, seed)
    return resume_or_start(
        DPOTrainer,
        run_name,
        steps,
        tick,
        model="tiny-think",
        pairs=pairs,
        task="scratchpad",
        seed=seed,
        max_steps=steps,
        save_steps=max(1, steps // 3),
    )


SOURCE = "Kimi k1.5 (Kimi Team 2025, arXiv 2501.12599)"
NOT_THINKING = (
    "A correct thought has a fixed length on this task (four running sums): the only shorter "
    "correct answer is a direct one, and answering directly is what costs accuracy here."
)
LONG2SHORT = (
    "Kimi applies long2short to its long-CoT RL model; here DPO starts from the cold start "
    "(its baseline), and its pairs mostly prefer a direct answer over a correct thought."
)
EXPERIMENT = Experiment(
    name="kimi_length",
    lab="92_kimi_length_penalty",
    arms=ARMS,
    train=train,
    steps=60,
    curves=(
        *CURVES,
        "rewards/kimi_length/mean",
        "rewards/plain_length/mean",
        "loss",
        "rewards/margins",
    ),
    claims=(
        Claim(
            "kimi-shorter",
            "Kimi's length reward shortens correct answers",
            f"{SOURCE} sec. 2.3.3",
            metric="length correct",
            arm="acc + kimi",
            baseline="acc",
            direction=-1,
            note="Held-out characters per correct answer. " + NOT_THINKING,
        ),
        Claim(
            "kimi-accuracy",
            "Kimi's length reward keeps accuracy",
            f"{SOURCE} sec. 2.3.3",
            metric="accuracy",
            arm="acc + kimi",
            baseline="acc",
            direction=0,
            margin=MARGIN,
            note=NOT_THINKING,
        ),
        Claim(
            "long2short-shorter",
            "long2short DPO shortens correct answers",
            f"{SOURCE} sec. 2.4",
            metric="length correct",
            arm="DPO long2short",
            baseline="cold start",
            direction=-1,
            note=LONG2SHORT,
        ),
        Claim(
            "long2short-accuracy",
            "long2short DPO keeps accuracy",
            f"{SOURCE} sec. 2.4",
            metric="accuracy",
            arm="DPO long2short",
            baseline="cold start",
            direction=0,
            margin=MARGIN,
            note=LONG2SHORT,
        ),
    ),
    live={"arms": ["acc", "acc + kimi"], "seeds": (0, 1), "steps": 30},
)
