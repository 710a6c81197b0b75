"""Step-level beam search guided by a PRM on the scratchpad task (Snell et al. 2024, arXiv
2408.03314, sec. 5; seed 000's Best-of-N / beam / MCTS / DVTS slide).

Keep ``width`` partial solutions; expand each by ``expand`` sampled next steps; score every
partial by the PRM (min over its steps so far); keep the best ``width``; a candidate that
reaches its answer is set aside; answer with the best finished one.

Departure: each continuation is sampled to ``STEP_LEN`` tokens and cut after its next step (one
batched call per round): the token count is what a sampler stopping at the step's end would
spend, not what we computed.
"""

from __future__ import annotations

import torch

from labkit.algos.verifier import StepVerifier, solution_score
from labkit.experiments.search_rank import answer_of
from labkit.models.rollout import rollout
from labkit.rewards.process import process_steps

STEP_LEN = 32  # the longest next step, "</think><answer>45</answer>" + eos, is 28 tokens


def next_step(prefix: str, completion: str, prompt: str):
    """Cut ``prefix + completion`` after the next process step: (text, finished).

    >>> next_step("", "<think>3+5=8 8+8=16</think><answer>16</answer>", "3+5+8=")
    ('<think>3+5=8', False)
    """
    full = prefix + completion
    # a continuation cut at STEP_LEN may not close its thought yet: close it to find the steps
    probe = full + "</think>" if "<think>" in full and "</think>" not in full else full
    for s in process_steps(probe, prompt)[:-1]:
        if s.end >= len(prefix) and s.end + 1 < len(full) and full[s.end + 1] in " <":
            return full[: s.end + 1], False  # a step followed by its delimiter in the text
    return full, True


def partial_score(prm: StepVerifier, prompts, texts, finished, aggregate: str = "min"):
    """PRM scores of partial (``finished`` False: its thought steps so far) or finished
    solutions (every step, the answer's too)."""
    probe = [t if f else t + "</think>" for t, f in zip(texts, finished)]
    probs = prm.step_probs(list(prompts), probe)
    return [
        solution_score(p if f else (p[:-1] or [1.0]), "prm", aggregate)
        for p, f in zip(probs, finished)
    ]


@torch.no_grad()
def beam_search(
    model,
    tokenizer,
    prm: StepVerifier,
    examples,
    width: int = 2,
    expand: int = 4,
    rounds: int = 6,
    seed: int = 0,
    aggregate: str = "min",
):
    """PRM-guided step-level beam search: (answers' correctness [P] bool, tokens [P] spent)."""
    gen = torch.Generator().manual_seed(seed)
    P = len(examples)
    beams, done, tokens = [[""] for _ in examples], [[] for _ in examples], torch.zeros(P)
    for _ in range(rounds):
        items = [(i, b) for i in range(P) for b in beams[i] for _ in range(expand)]
        if not items:
            break
        conts = rollout(
            model,
            tokenizer,
            [examples[i].prompt + b for i, b in items],
            STEP_LEN,
            temperature=1.0,
            generator=gen,
        ).completions
        cut = [next_step(b, c, examples[i].prompt) for (i, b), c in zip(items, conts)]
        sc = partial_score(
            prm,
            [examples[i].prompt for i, _ in items],
            [t for t, _ in cut],
            [f for _, f in cut],
            aggregate,
        )
        cand = [[] for _ in examples]
        for (i, b), (t, f), s in zip(items, cut, sc):
            tokens[i] += len(t) - len(b) + f  # + the eos when it finishes
            (done[i] if f else cand[i]).append((s, t))
        beams = [[t for _, t in sorted(c, reverse=True)[:width]] for c in cand]
    best = [max(d)[1] if d else "" for d in done]
    ok = torch.tensor([answer_of(c) == int(e.answer) for c, e in zip(best, examples)])  # [P]
    return ok, tokens
