"""Kimi k1.5's length penalty and long2short: shorter correct answers at equal accuracy?

Kimi k1.5 (Kimi Team 2025, arXiv 2501.12599, sec. 2.3.3): within a prompt's group of k samples,
    lambda_i = 0.5 - (len_i - min_len) / (max_len - min_len)
    len_reward_i = lambda_i if correct_i else min(0, lambda_i)
(``labkit.rewards.reasoning.kimi_length``), added to the accuracy reward; and long2short
(sec. 2.4): DPO with the shortest correct answer as chosen and a longer correct one as rejected
(``pair_mode="long2short"``, ``labkit.algos.pairs.rank_pairs``).

Four runs from the thinking cold start ``tiny-think`` on ``scratchpad``, same seed and budget:
  acc            GRPO, r = answer_match                               (the reference)
  acc + kimi     GRPO, r = answer_match + W * kimi_length
  acc + plain    GRPO, r = answer_match + W * plain_length (-len / L_max for every answer)
  DPO long2short DPO on pairs sampled from tiny-think (8 per prompt)
On this toy the shortest correct answer is a direct one (``<answer>25</answer>``, 19 chars vs
~50 with a thought), so shortening can mean not thinking.
"""

from __future__ import annotations

import random
import time

import pandas as pd
import torch

from labkit.algos.dpo import DPOTrainer
from labkit.algos.pairs import rank_pairs
from labkit.experiments.r1_zero import SETUP, heldout
from labkit.experiments.r1_zero import single_run as train
from labkit.models.policy import load_policy
from labkit.models.rollout import rollout
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
"""'Equal accuracy': at most this much held-out accuracy below the accuracy-only run."""


def plain_length(completions: list[str], **kwargs) -> list[float]:
    """A plain length penalty: -len / L_max (characters), correct or not.

    >>> plain_length(["x" * 36, ""])
    [-0.5, 0.0]
    """
    return [-len(c) / SETUP["max_completion_length"] for c in completions]


VARIANTS = {
    "acc": (["answer_match"], [1.0]),
    "acc + kimi": (["answer_match", "kimi_length"], [1.0, W]),
    "acc + plain": (["answer_match", plain_length], [1.0, W]),
}
"""name -> (reward functions, weights) of the GRPO runs."""


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


def run(
    fast: bool = False,
    seed: int = 0,
    steps: int | None = None,
    n_eval: int | None = None,
    progress: bool = True,
) -> dict:
    """The GRPO ``VARIANTS`` and DPO long2short (full 60 steps, fast 8). Returns
    ``{"runs", "table", "config"}``; the table is held-out, T = 1."""
    torch.set_num_threads(1)
    steps, n_eval = steps or (8 if fast else 60), n_eval or (100 if fast else 300)
    rows = [{"run": "cold start", **heldout(*load_policy("tiny-think"), n=n_eval, seed=seed)}]
    runs = {}
    for name, (funcs, weights) in VARIANTS.items():
        trainer, secs = train(
            name, "tiny-think", funcs, weights, steps, seed, progress, prefix="lab92-"
        )
        runs[name] = trainer.log
        rows.append(
            {
                "run": name,
                **heldout(trainer.model, trainer.tokenizer, n=n_eval, seed=seed),
                "seconds": secs,
            }
        )
    t0 = time.perf_counter()
    pairs = long2short_pairs(64 if fast else 512, seed)
    dpo = DPOTrainer(
        "tiny-think",
        pairs=pairs,
        task="scratchpad",
        seed=seed,
        max_steps=steps,
        run_name="lab92-dpo-long2short",
        save_steps=0,
    )
    dpo.train(progress=progress)
    rows.append(
        {
            "run": "DPO long2short",
            **heldout(dpo.model, dpo.tokenizer, n=n_eval, seed=seed),
            "seconds": time.perf_counter() - t0,
        }
    )
    return {
        "runs": runs,
        "dpo": dpo.log,
        "pairs": len(pairs),
        "table": pd.DataFrame(rows).set_index("run"),
        "config": {"steps": steps, "seed": seed, "n_eval": n_eval, "w": W, **SETUP},
    }


def verdict(results: dict) -> str:
    """Per method: correct answers shorter than the accuracy-only run's, accuracy within
    ``MARGIN`` of it."""
    t = results["table"]
    ref = t.loc["acc"]
    lines = [
        (
            f"acc (reference): accuracy {ref['accuracy']:.3f}, length of correct answers "
            f"{ref['length correct']:.1f} chars, think rate {ref['think']:.3f}."
        )
    ]
    for name in [r for r in t.index if r not in ("acc", "cold start")]:
        r = t.loc[name]
        shorter = r["length correct"] < ref["length correct"]
        kept = r["accuracy"] >= ref["accuracy"] - MARGIN
        word = "REPRODUCED" if shorter and kept else "NOT REPRODUCED"
        lines.append(
            f"{word} ({name}): correct answers {r['length correct']:.1f} chars "
            f"(shorter: {shorter}), accuracy {r['accuracy']:.3f} (within {MARGIN}: "
            f"{kept}), think rate {r['think']:.3f}."
        )
    return "\n".join(lines)
