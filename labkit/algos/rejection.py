"""Rejection sampling: draw n completions per prompt, keep the verified ones as SFT pairs.

RFT (Yuan et al. 2023, arXiv 2308.01825; DeepSeekMath, arXiv 2402.03300, section 5.2.1):
    D_RFT = {(q, o) : q ~ P_sft(Q), o ~ pi_sft(O | q), o verified correct},
and SFT on D_RFT. Online RFT samples from the current policy pi_theta each step instead;
in DeepSeekMath's unified view its gradient coefficient is GC(q, o) = 1[o correct] (GRPO's is
the group-normalised advantage, which is also negative on wrong answers). DeepSeek-R1 (arXiv
2501.12948, section 2.3.3) keeps "correct and well formed" traces of the RL policy
(``keep="correct_think"`` here: verified and a non-empty ``<think>``).

Departures: no deduplication of identical traces (RFT keeps distinct reasoning paths only).

>>> from labkit.tasks.scratchpad import Scratchpad
>>> r = RejectionSample(["1+2=", "1+2="], ["<answer>3</answer>", "<answer>4</answer>"],
...                     ["3", "3"], [True, False], [False, False], [18, 18])
>>> r.pairs, r.stats()["kept_frac"]
([('1+2=', '<answer>3</answer>')], 0.5)
"""

from __future__ import annotations

from dataclasses import dataclass

from labkit.core.options import REJECTION_KEEPS, choose
from labkit.runs.evaluate import probe
from labkit.tasks.scratchpad import parse


@dataclass
class RejectionSample:
    """Every drawn completion with its verdicts; ``pairs`` are the kept ones."""

    prompts: list[str]
    completions: list[str]
    answers: list[str]
    correct: list[bool]  # the task's verifier
    think: list[bool]  # well formed with a non-empty <think>
    lengths: list[int]  # completion tokens, eos included
    keep: str = "correct"

    @property
    def kept(self) -> list[bool]:
        """Which samples pass the filter ``keep``."""
        return [c and (t or self.keep == "correct") for c, t in zip(self.correct, self.think)]

    @property
    def pairs(self) -> list[tuple[str, str]]:
        """(prompt, completion) of the kept samples: the SFT data."""
        return [(p, c) for p, c, k in zip(self.prompts, self.completions, self.kept) if k]

    def stats(self) -> dict:
        """Over all drawn samples: accuracy, think rate, mean length; kept count and share;
        distinct prompts with at least one kept sample (``prompts_covered``)."""
        n, kept = len(self.completions), self.kept
        return {
            "drawn": n,
            "kept": sum(kept),
            "kept_frac": sum(kept) / max(1, n),
            "accuracy": sum(self.correct) / max(1, n),
            "think_rate": sum(self.think) / max(1, n),
            "len_mean": sum(self.lengths) / max(1, n),
            "prompts_covered": len({p for p, k in zip(self.prompts, kept) if k}),
        }


def rejection_sample(
    model,
    tokenizer,
    task,
    examples,
    n: int = 1,
    keep: str = "correct",
    max_completion_length: int = 64,
    temperature: float = 1.0,
    seed: int = 0,
    batch_size: int = 512,
) -> RejectionSample:
    """Sample ``n`` completions for each example (seeded generator) and verify each: a
    :func:`~labkit.runs.evaluate.probe` of ``examples``.

    With ``n=1`` on held-out examples, ``.stats()`` is a held-out probe: sampled accuracy,
    think rate and mean length at ``temperature``.
    """
    choose("keep", keep, REJECTION_KEEPS)
    if n < 1:
        raise ValueError(f"n={n}: draw at least 1 completion per prompt")
    p = probe(
        model,
        tokenizer,
        task,
        examples=examples,
        samples=n,
        temperature=temperature,
        max_completion_length=max_completion_length,
        seed=seed,
        batch_size=batch_size,
    )
    return RejectionSample(
        [e.prompt for e in p.examples],
        p.completions,
        [e.answer for e in p.examples],
        p.correct,
        [bool(parse(c).well_formed and parse(c).think) for c in p.completions],
        p.lengths,
        keep,
    )
