"""pass@k and maj@k before and after RL: does GRPO sharpen sampling, or widen what it can solve?

pass@k (Chen et al. 2021, 2107.03374, eq. 1): from n samples with c correct,
    pass@k = E[1 - C(n - c, k) / C(n, k)]                          (``labkit.runs.evaluate``)
maj@k (self-consistency, Wang et al. 2203.11171; R1's cons@64): the most frequent final answer of
k samples is right,
    maj@k = E_{S subset of the n samples, |S| = k}[ 1{argmax_a #{i in S : a_i = a} = a*} ].

Departures, and why:
- maj@k is averaged over ``subsets`` random k-subsets (without replacement) of the n samples per
  prompt: a Monte-Carlo estimate of the all-subsets average (a U-statistic, unbiased for maj@k
  of the policy). ``labkit.runs.evaluate.pass_and_majority`` votes once over the first k samples,
  which has the same mean and more variance; we print that one-draw column next to ours.
- Votes go to the parsed integer (``parse_int``), so " 42" and "42" agree; unparseable outputs
  do not vote; ties between answers are broken uniformly at random; no valid vote -> wrong.
- The policy is the tiny char-level model on 2-digit addition, whose answer space is ~200
  integers: pass@64 near 1 is partly a ceiling, so we also count prompts never solved in n samples.
"""

from __future__ import annotations

import pandas as pd
import torch

from labkit.algos.config import BASE_RUN as BASE
from labkit.algos.grpo import GRPOTrainer
from labkit.runs.evaluate import majority_correct, pass_at_k, probe
from labkit.tasks.arithmetic import parse_int

CLAIM = (
    "RL sharpens the sampling distribution rather than widening what the model can solve. "
    "DeepSeek-R1-Zero (DeepSeek-AI 2025, arXiv 2501.12948): RL lifts AIME 2024 pass@1 from 15.6 "
    "to 71.0, and majority voting over 64 samples (cons@64) to 86.7. DeepSeekMath (Shao et al. "
    "2024, arXiv 2402.03300, sec. 5.2.2, fig. 7): RL improves Maj@K but not Pass@K. Yue et al. "
    "2025 (arXiv 2504.13837): RL raises pass@1 while pass@k at large k moves little, and the "
    "base model's pass@k at large k can even exceed the RL model's. On the toy: RL lifts pass@1 "
    "and maj@k much more than pass@64."
)
KS = (1, 2, 4, 8, 16, 32, 64)


@torch.no_grad()
def sample_answers(
    model,
    tokenizer,
    task,
    examples,
    n: int,
    temperature: float = 1.0,
    seed: int = 0,
    batch_size: int = 1024,
    progress: bool = False,
):
    """n completions per prompt (a :func:`~labkit.runs.evaluate.probe`) -> (texts [P][n],
    values [P, n] parsed ints or -1, target [P]).

    >>> import labkit as lk; m, tok = lk.load_policy("tiny"); t = lk.get_task("addition")
    >>> texts, values, target = sample_answers(m, tok, t, t.heldout[:3], n=2)
    >>> values.shape, target.shape, len(texts[0])
    (torch.Size([3, 2]), torch.Size([3]), 2)
    """
    p = probe(
        model,
        tokenizer,
        task,
        examples=examples,
        samples=n,
        temperature=temperature,
        seed=seed,
        batch_size=batch_size,
        progress=progress,
    )
    texts = p.by_prompt(n)
    parsed = [parse_int(t) for t in p.completions]
    values = torch.tensor([-1 if v is None else v for v in parsed]).view(len(examples), n)  # [P, n]
    target = torch.tensor([int(e.answer) for e in examples])  # [P]
    return texts, values, target


def majority_at_k(
    values: torch.Tensor,
    target: torch.Tensor,
    k: int,
    subsets: int = 32,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Per-prompt maj@k [P], averaged over ``subsets`` random k-subsets of the n samples.

    ``values`` [P, n] are answers (-1: unparseable, no vote). Within a subset each sample's
    vote count is #{j in S : a_j = a_i}; the winner is a sample of maximal count, chosen
    uniformly (tied answers have equal counts, so this is a fair coin between answers).

    >>> v = torch.tensor([[5, 5, 7]]); t = torch.tensor([5])
    >>> round(float(majority_at_k(v, t, 2, subsets=20000, generator=torch.Generator().manual_seed(0))), 1)
    0.7
    """
    P, n = values.shape
    perm = torch.rand(P, subsets, n, generator=generator).argsort(-1)[..., :k]  # [P, R, k]
    v = values.gather(1, perm.reshape(P, -1)).view(P, subsets, k)  # [P, R, k]
    counts = (v[..., :, None] == v[..., None, :]).sum(-1) * (v >= 0)  # [P, R, k]; invalid: 0
    score = counts + 0.5 * torch.rand(P, subsets, k, generator=generator)  # [P, R, k] tie-break
    winner = v.gather(-1, score.argmax(-1, keepdim=True)).squeeze(-1)  # [P, R]
    ok = (winner == target[:, None]) & (counts.amax(-1) > 0)  # [P, R]
    return ok.float().mean(-1)  # [P]


def curves(
    texts, values, target, task, examples, ks=KS, subsets: int = 32, seed: int = 0
) -> pd.DataFrame:
    """One row per k: pass@k (unbiased), maj@k (subset average), maj@k over the first k samples
    (``majority_correct``, the library's one draw), each a mean over prompts, with its standard
    error across prompts."""
    P, n = values.shape
    gen = torch.Generator().manual_seed(seed)
    c = (values == target[:, None]).sum(-1).tolist()  # [P] correct samples per prompt
    rows = []
    for k in ks:
        pk = torch.tensor([pass_at_k(n, ci, k) for ci in c])  # [P]
        mk = majority_at_k(values, target, k, subsets, gen)  # [P]
        first = torch.tensor(
            [float(majority_correct(t[:k], e.answer, task)) for t, e in zip(texts, examples)]
        )  # [P]
        rows.append(
            {
                "k": k,
                "pass@k": float(pk.mean()),
                "pass@k se": float(pk.std() / P**0.5),
                "maj@k": float(mk.mean()),
                "maj@k se": float(mk.std() / P**0.5),
                "maj@k first-k": float(first.mean()),
            }
        )
    df = pd.DataFrame(rows)
    df["pass@k - pass@1"] = df["pass@k"] - df["pass@k"].iloc[0]
    return df


def coverage(before: torch.Tensor, after: torch.Tensor, target: torch.Tensor) -> dict:
    """Yue et al.'s question in counts: of P prompts, how many has each model solved at least
    once in n samples, and how many only one of them has solved."""
    b = (before == target[:, None]).any(-1)  # [P]
    a = (after == target[:, None]).any(-1)  # [P]
    return {
        "prompts": len(target),
        "solved before": int(b.sum()),
        "solved after": int(a.sum()),
        "only before": int((b & ~a).sum()),
        "only after": int((a & ~b).sum()),
    }


def run(
    fast: bool = False,
    seed: int = 0,
    steps: int | None = None,
    prompts: int | None = None,
    n: int | None = None,
    subsets: int = 32,
    temperature: float = 1.0,
    progress: bool = True,
) -> dict:
    """Sample n answers per held-out prompt from the tiny policy, train it with the labs'
    base GRPO run (``BASE_RUN``), sample again with the same seed, and tabulate pass@k and maj@k.

    Full: 600 steps, 500 prompts x 64 samples. Fast: 30 steps, 50 prompts x 16 samples.
    Returns ``{"curves": DataFrame (model, k, pass@k, maj@k, ...), "coverage": dict,
    "run": RunLog, "config": dict}``.
    """
    steps = steps or (30 if fast else BASE["max_steps"])
    P, n = prompts or (50 if fast else 500), n or (16 if fast else 64)
    ks = [k for k in KS if k <= n]
    trainer = GRPOTrainer("tiny", task="addition", seed=seed, **(BASE | {"max_steps": steps}))
    task, examples = trainer.task, trainer.task.heldout[:P]

    def evaluate(name):
        texts, values, target = sample_answers(
            trainer.model,
            trainer.tokenizer,
            task,
            examples,
            n,
            temperature,
            seed + 1,
            progress=progress,
        )
        df = curves(texts, values, target, task, examples, ks, subsets, seed + 2)
        return df.assign(model=name), values, target

    before, v0, target = evaluate("before RL")
    log = trainer.train(progress=progress)
    after, v1, _ = evaluate(f"after RL ({steps} steps)")
    cfg = {
        "steps": steps,
        "prompts": P,
        "n": n,
        "subsets": subsets,
        "temperature": temperature,
        "seed": seed,
    }
    return {
        "curves": pd.concat([before, after], ignore_index=True),
        "coverage": coverage(v0, v1, target),
        "run": log,
        "config": cfg,
    }


def lifts(results: dict) -> pd.DataFrame:
    """One row per k: pass@k and maj@k before, after, and the lift after - before."""
    df = results["curves"]
    models = list(dict.fromkeys(df["model"]))
    b, a = (df[df["model"] == m].set_index("k") for m in models)
    out = pd.DataFrame(
        {
            "pass@k before": b["pass@k"],
            "pass@k after": a["pass@k"],
            "maj@k before": b["maj@k"],
            "maj@k after": a["maj@k"],
        }
    )
    out["pass@k lift"] = out["pass@k after"] - out["pass@k before"]
    out["maj@k lift"] = out["maj@k after"] - out["maj@k before"]
    return out


def verdict(results: dict) -> str:
    """Plain words with the numbers: is the lift in pass@1 and maj@K more than twice the lift in
    pass@K (K the largest k), and what does majority voting add to pass@1 (R1-Zero's cons@64)?"""
    t, cov, n = lifts(results), results["coverage"], results["config"]["n"]
    K = int(t.index.max())
    p1, pK, mK = t.loc[1, "pass@k lift"], t.loc[K, "pass@k lift"], t.loc[K, "maj@k lift"]
    sharp = p1 > 2 * max(pK, 0) and mK > 2 * max(pK, 0)

    def row(name, col, k):
        b, a = t.loc[k, f"{col} before"], t.loc[k, f"{col} after"]
        return f"{name} {b:.3f} -> {a:.3f} (lift {a - b:+.3f})"

    gap = [t.loc[K, f"pass@k {w}"] - t.loc[1, f"pass@k {w}"] for w in ("before", "after")]
    vote = [t.loc[K, f"maj@k {w}"] - t.loc[1, f"pass@k {w}"] for w in ("before", "after")]
    lines = [
        (
            f"{row('pass@1', 'pass@k', 1)}; {row(f'maj@{K}', 'maj@k', K)}; "
            f"{row(f'pass@{K}', 'pass@k', K)}."
        ),
        f"gap pass@{K} - pass@1: {gap[0]:.3f} before, {gap[1]:.3f} after RL.",
        (
            f"majority voting, maj@{K} - pass@1: {vote[0]:+.3f} before, {vote[1]:+.3f} after RL "
            f"(R1-Zero cons@64 - pass@1: 86.7 - 71.0 = +15.7 points)."
        ),
        (
            f"prompts solved at least once in {n} samples: {cov['solved before']} before, "
            f"{cov['solved after']} after, of {cov['prompts']} (only before: {cov['only before']}, "
            f"only after: {cov['only after']})."
        ),
        "REPRODUCED: RL lifts pass@1 and maj@k much (>2x) more than pass@k at large k."
        if sharp
        else "NOT REPRODUCED: the lift in pass@1 or maj@k is not more than 2x the pass@k lift.",
    ]
    if pK < 0:
        lines.append(f"As in Yue et al., the base model's pass@{K} is higher than after RL.")
    if t.loc[K, "pass@k before"] > 0.95:
        lines.append(
            f"Caveat: pass@{K} starts at {t.loc[K, 'pass@k before']:.3f}, near its "
            "ceiling (~200 possible answers), so it had little room to move."
        )
    return "\n".join(lines)
