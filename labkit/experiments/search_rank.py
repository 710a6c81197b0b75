"""Test-time search by ranking N samples: best-of-N by a verifier, majority vote and pass@N
(the oracle), per prompt, against tokens spent (the pure helpers of the search lab).

- best-of-N: draw N completions, answer with the one the verifier scores highest: the ORM's
  final probability, or the PRM's min or product over steps (Lightman et al. 2023, arXiv
  2305.20050; Cobbe et al. 2021, arXiv 2110.14168).
- maj@N: the most frequent answer (self-consistency, Wang et al. 2022, arXiv 2203.11171).
- pass@N: some completion is right (Chen et al. 2021, arXiv 2107.03374): what a perfect
  verifier would reach.

Departure: best-of-N accuracy is averaged over ``subsets`` random N-subsets of the n samples
per prompt (as ``passk.majority_at_k``), ties broken at random.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import torch

from labkit.algos.verifier import StepVerifier, solution_score
from labkit.experiments.passk import majority_at_k
from labkit.runs.evaluate import pass_at_k
from labkit.tasks.arithmetic import parse_int
from labkit.tasks.scratchpad import parse

ORACLE, VOTE = "pass@N (oracle)", "majority vote"


def answer_of(completion: str) -> int:
    """The parsed answer, -1 when the completion is malformed (no vote)."""
    p = parse(completion)
    v = parse_int(p.answer) if p.well_formed else None
    return -1 if v is None else v


def table(texts, examples):
    """(values [P, n] parsed answers, target [P], lengths [P, n] tokens incl. eos)."""
    values = torch.tensor([[answer_of(c) for c in row] for row in texts])  # [P, n]
    target = torch.tensor([int(e.answer) for e in examples])  # [P]
    lengths = torch.tensor([[len(c) + 1 for c in row] for row in texts]).float()  # [P, n]
    return values, target, lengths


def verifier_scores(v: StepVerifier, texts, examples, aggregate: str = "min") -> torch.Tensor:
    """Each completion's solution score by the verifier: [P, n]."""
    n = len(texts[0])
    prompts = [e.prompt for e in examples for _ in range(n)]
    probs = v.step_probs(prompts, [c for row in texts for c in row])
    s = [solution_score(p, v.kind, aggregate) for p in probs]
    return torch.tensor(s).view(len(examples), n)  # [P, n]


def best_of_n(
    scores: torch.Tensor,
    correct: torch.Tensor,
    N: int,
    subsets: int = 32,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Per-prompt accuracy [P] of answering with the top-scored of N samples, averaged over
    ``subsets`` random N-subsets of the n samples; ties broken at random.

    >>> s = torch.tensor([[0.9, 0.1, 0.5]]); ok = torch.tensor([[False, True, True]])
    >>> best_of_n(s, ok, 3).tolist(), best_of_n(-s, ok, 3).tolist()
    ([0.0], [1.0])
    """
    P, n = scores.shape
    perm = torch.rand(P, subsets, n, generator=generator).argsort(-1)[..., :N]  # [P, R, N]
    s = scores.gather(1, perm.reshape(P, -1)).view(P, subsets, N)  # [P, R, N]
    s = s + 1e-6 * torch.rand(P, subsets, N, generator=generator)  # [P, R, N] tie-break
    pick = perm.gather(-1, s.argmax(-1, keepdim=True)).squeeze(-1)  # [P, R]
    return correct.float().gather(1, pick).mean(-1)  # [P]


def pass_at(correct: torch.Tensor, N: int) -> torch.Tensor:
    """Unbiased pass@N per prompt [P] (Chen et al. eq. 1) from correct [P, n]."""
    n = correct.shape[1]
    return torch.tensor([pass_at_k(n, int(c), N) for c in correct.sum(-1)])  # [P]


def curves(texts, examples, verifiers: dict, Ns, subsets: int = 32, seed: int = 0):
    """One row per (method, N): accuracy (mean over prompts), its standard error, tokens per
    prompt (N x mean length). ``verifiers``: name -> (StepVerifier, aggregate)."""
    values, target, lengths = table(texts, examples)
    correct = values == target[:, None]  # [P, n]
    gen = torch.Generator().manual_seed(seed)
    scored = {
        name: verifier_scores(v, texts, examples, agg) for name, (v, agg) in verifiers.items()
    }  # name -> [P, n]
    rows = []
    for N in Ns:
        acc = {
            ORACLE: pass_at(correct, N),
            VOTE: majority_at_k(values, target, N, subsets=subsets, generator=gen),
        }
        acc |= {
            f"best-of-N, {k}": best_of_n(s, correct, N, subsets=subsets, generator=gen)
            for k, s in scored.items()
        }
        for method, a in acc.items():
            rows.append(
                {
                    "method": method,
                    "N": N,
                    "accuracy": float(a.mean()),
                    "se": float(a.std() / len(a) ** 0.5),
                    "tokens/prompt": float(N * lengths.mean()),
                }
            )
    return pd.DataFrame(rows)


def at_budget(tokens, accuracy, budget: float) -> float:
    """Accuracy at ``budget`` tokens per prompt on a curve of (``tokens``, ``accuracy``) points,
    linear in log tokens between the neighbouring points (held at the ends).

    >>> round(at_budget([100, 400], [0.5, 0.7], 200), 3)
    0.6
    """
    x = [math.log(t) for t in tokens]
    return float(np.interp(math.log(budget), x, accuracy))
