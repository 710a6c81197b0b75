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
  which has the same mean and more variance; :func:`curves` reports that one draw next to ours.
- Votes go to the parsed integer (``parse_int``), so " 42" and "42" agree; unparseable outputs
  do not vote; ties between answers are broken uniformly at random; no valid vote -> wrong.
- The policy is the tiny char-level model on 2-digit addition, whose answer space is ~200
  integers: pass@64 near 1 is partly a ceiling, so we also count prompts never solved in n samples.
- Two arms on the same seeds: "before RL" samples the cold-started policy, "after RL" trains it
  with the labs' base GRPO run (``BASE_RUN``) and samples again; a seed sets the RL run and the
  sampling (same prompts, the first :data:`PROBE` held-out ones, n = 64 samples each). The
  seeds' spread (the RL run) dominates the probe's: a few hundred prompts resolve it.
"""

from __future__ import annotations

import pandas as pd
import torch

from labkit.algos.config import BASE_RUN as BASE
from labkit.experiments.arms import grpo_run
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, Outcome
from labkit.models.policy import load_policy
from labkit.runs.evaluate import majority_correct, pass_at_k, probe
from labkit.tasks import get_task
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
PROBE = {"full": 300, "fast": 20}
"""Held-out prompts sampled n = 64 times each."""
N = 64
SUBSETS = 32


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


ARMS = {"before RL": {"rl": False}, "after RL": {"rl": True}}
"""The cold-started policy, and the same after the labs' base GRPO run."""
SOURCE = {
    "r1": "DeepSeek-R1 (DeepSeek-AI 2025, 2501.12948) sec. 2.2.4, table 2",
    "math": "DeepSeekMath (Shao et al. 2024, 2402.03300) sec. 5.2.2, fig. 7",
    "yue": "Yue et al. 2025 (2504.13837)",
}


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed: sample the policy (after ``steps`` of the base GRPO run for
    "after RL") on the probe's prompts, n = :data:`N` times each, summarised by
    :func:`summary`."""
    n_prompts = PROBE["fast" if fast else "full"]
    if not settings["rl"]:
        model, tokenizer = load_policy("tiny")
        tick(steps, steps)
        task, curves_ = get_task("addition"), pd.DataFrame({"step": []})
    else:
        base = {k: v for k, v in BASE.items() if k != "max_steps"}
        trainer = grpo_run(
            "tiny",
            {},
            seed=seed,
            steps=steps,
            run_name=run_name,
            tick=tick,
            task="addition",
            **base,
        )
        model, tokenizer, task = trainer.model, trainer.tokenizer, trainer.task
        curves_ = trainer.log.metrics
    return Outcome(summary(model, tokenizer, task, task.heldout[:n_prompts], seed), curves_)


def summary(model, tokenizer, task, examples, seed: int) -> dict:
    """pass@k and maj@k for every k in :data:`KS` from n = :data:`N` samples per prompt, the
    gaps pass@64 - pass@1 and pass@64 - maj@64, and the fraction of prompts never solved."""
    texts, values, target = sample_answers(model, tokenizer, task, examples, N, seed=seed + 1)
    t = curves(texts, values, target, task, examples, KS, SUBSETS, seed + 2).set_index("k")
    K = KS[-1]
    out = {f"pass@{k}": float(t.loc[k, "pass@k"]) for k in KS}
    out |= {f"maj@{k}": float(t.loc[k, "maj@k"]) for k in KS}
    out[f"pass@{K} - pass@1"] = out[f"pass@{K}"] - out["pass@1"]
    out[f"pass@{K} - maj@{K}"] = out[f"pass@{K}"] - out[f"maj@{K}"]
    out["unsolved"] = float((values != target[:, None]).all(-1).float().mean())
    return out


def k_table(summaries: pd.DataFrame) -> pd.DataFrame:
    """The summaries in long form, one row per (arm, seed, k): pass@k and maj@k (the lab's
    curves over k)."""
    rows = [
        {
            "arm": r["arm"],
            "seed": r["seed"],
            "k": k,
            "pass@k": r[f"pass@{k}"],
            "maj@k": r[f"maj@{k}"],
        }
        for r in summaries.to_dict("records")
        for k in KS
    ]
    return pd.DataFrame(rows)


def _after(key: str, text: str, source: str, metric: str, direction: int = 1, **kw) -> Claim:
    return Claim(
        key,
        text,
        source,
        metric=metric,
        arm="after RL",
        baseline="before RL",
        direction=direction,
        **kw,
    )


CEILING = (
    "pass@64 starts near 1: the answer space is ~200 integers, so pass@64 has little room to "
    "move either way on this toy"
)
EXPERIMENT = Experiment(
    name="passk",
    lab="75_passk_majk",
    arms=ARMS,
    train=train,
    steps=BASE["max_steps"],
    curves=("reward/mean", "accuracy"),
    claims=(
        _after("pass1", "RL lifts pass@1", SOURCE["r1"], "pass@1"),
        _after("maj64", "RL lifts maj@64 (majority vote of 64 samples)", SOURCE["r1"], "maj@64"),
        _after(
            "passk-flat",
            "RL improves Maj@K but not Pass@K: pass@64 stays where it was",
            SOURCE["math"],
            "pass@64",
            direction=0,
            margin=0.02,
            note=CEILING,
        ),
        _after(
            "sharpens-pass",
            "RL lifts pass@1 more than pass@64: the gap pass@64 - pass@1 shrinks",
            f"{SOURCE['yue']}; {SOURCE['math']}",
            "pass@64 - pass@1",
            direction=-1,
        ),
        _after(
            "sharpens-maj",
            "RL lifts maj@64 more than pass@64: the gap pass@64 - maj@64 shrinks",
            SOURCE["math"],
            "pass@64 - maj@64",
            direction=-1,
        ),
        _after(
            "base-wins-large-k",
            "the base model's pass@k at large k exceeds the RL model's (pass@64)",
            SOURCE["yue"],
            "pass@64",
            direction=-1,
            note=CEILING,
        ),
    ),
    live={"arms": list(ARMS), "seeds": (0, 1), "steps": 150},
)
