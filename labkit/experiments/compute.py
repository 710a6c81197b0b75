"""Equal compute for a small model trained two ways: SFT on given traces or RL on its own samples.

Compute is counted in forward-token units, after Kaplan et al. 2020 (arXiv 2001.08361,
sec. 2.1): a forward pass costs about 2N FLOPs per token of an N-parameter model, a forward
and backward pass about 6N, so

    one token sampled (a forward, KV cache)            1 unit
    one token trained (forward + backward)             3 units
    SFT step       3 sum_i (|x_i| + |y_i|)              pairs (x, y) of the batch, eos in |y|
    RL step        (1 + 3) sum_i (|x_i| + |o_i|)        each completion sampled, then trained

with mu = 1 and beta = 0 (no second forward for pi_old or pi_ref). Only real tokens count, not
padding; the model's N is the same on both sides, so it cancels. The teacher's cost of writing
the traces is not charged to SFT: R1 sec. 4.1 takes the teacher as given.

>>> sft_units([("1+2=", "<answer>3</answer>")])
69
>>> rl_units(batch=2, prompt_tokens=4, completion_mean=18.0)
176.0
"""

from __future__ import annotations

import pandas as pd

FORWARD, TRAIN = 1, 3
"""Units per token: sampled (forward only), trained (forward + backward)."""


def sft_units(pairs) -> int:
    """Units of one SFT pass over ``pairs`` (char-level tokens: one a character, + eos)."""
    return TRAIN * sum(len(x) + len(y) + 1 for x, y in pairs)


def rl_units(batch: int, prompt_tokens: float, completion_mean: float) -> float:
    """Units of one RL step: ``batch`` completions of mean length ``completion_mean`` (tokens,
    eos included) after prompts of ``prompt_tokens``, each sampled and then trained."""
    return (FORWARD + TRAIN) * batch * (prompt_tokens + completion_mean)


def rl_spent(metrics: pd.DataFrame, batch: int, prompt_tokens: float) -> float:
    """Units an RL run has spent so far, from its per-step ``len/mean``.

    >>> rl_spent(pd.DataFrame({"len/mean": [18.0, 20.0]}), batch=2, prompt_tokens=4)
    368.0
    """
    if len(metrics) == 0:
        return 0.0
    return float(sum(rl_units(batch, prompt_tokens, x) for x in metrics["len/mean"]))


class ComputeBudget:
    """An ``until`` for ``resume_or_start``: true once the RL run has spent ``units``; on the
    way, at each fraction of ``fractions`` first crossed, it calls ``at(fraction, trainer)``.
    Stateless across a resume: the spend is read from the run's own metrics each time."""

    def __init__(self, units: float, batch: int, prompt_tokens: float, fractions=(), at=None):
        self.units, self.batch, self.prompt_tokens = units, batch, prompt_tokens
        self.fractions, self.at = tuple(sorted(fractions)), at

    def spent(self, trainer) -> float:
        return rl_spent(trainer.log.metrics, self.batch, self.prompt_tokens)

    def __call__(self, trainer) -> bool:
        m = trainer.log.metrics
        now = self.spent(trainer)
        before = now - (
            rl_units(self.batch, self.prompt_tokens, m["len/mean"].iloc[-1]) if len(m) else 0
        )
        for f in self.fractions:
            if before < f * self.units <= now and self.at is not None:
                self.at(f, trainer)
        return now >= self.units
