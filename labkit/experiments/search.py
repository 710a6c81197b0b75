"""Search at test time on the scratchpad task: best-of-N by a verifier, majority vote, and a
step-level beam search guided by a PRM, against pass@N (the oracle), by tokens spent.

- best-of-N: draw N completions, answer with the one the verifier scores highest: the ORM's
  final probability, or the PRM's min or product over steps (Lightman et al. 2023, arXiv
  2305.20050; Cobbe et al. 2021, arXiv 2110.14168).
- maj@N: the most frequent answer (self-consistency, Wang et al. 2022, arXiv 2203.11171).
- pass@N: some completion is right (Chen et al. 2021, arXiv 2107.03374): what a perfect
  verifier would reach.
- beam search (Snell et al. 2024, arXiv 2408.03314, sec. 5; seed 000's Best-of-N / beam / MCTS
  / DVTS slide): keep ``width`` partial solutions; expand each by ``expand`` sampled next steps;
  score every partial by the PRM (min over its steps so far); keep the best ``width``; a
  candidate that reaches its answer is set aside; answer with the best finished one.

Departures, and why: best-of-N accuracy is averaged over ``subsets`` random N-subsets of the n
samples per prompt (as ``passk.majority_at_k``), ties broken at random; beam search samples each
continuation to the end and cuts it after the next step (one batched call per round): the token
count is what a sampler stopping at the step's end would spend, not what we computed.
"""

from __future__ import annotations

import functools

import torch

from labkit.algos.verifier import StepVerifier, solution_score, train_verifier, verifier_quality
from labkit.experiments.passk import majority_at_k
from labkit.models.policy import load_policy
from labkit.models.rollout import rollout
from labkit.rewards.process import process_steps
from labkit.runs.evaluate import probe
from labkit.tasks import get_task
from labkit.tasks.arithmetic import parse_int
from labkit.tasks.scratchpad import parse

CLAIM = (
    "Spending compute at test time buys accuracy, and a process verifier spends it best. "
    "Lightman et al. 2023 (arXiv 2305.20050, fig. 3): best-of-N ranked by a PRM solves more MATH "
    "problems than ranked by an ORM or by majority vote, the gap growing with N (78.2 % vs "
    "72.4 % vs 69.6 % at N = 1860). Snell et al. 2024 (arXiv 2408.03314, fig. 3): PRM-guided "
    "beam search beats best-of-N at small budgets. On the toy: best-of-N by a verifier beats a "
    "single sample, and we measure PRM vs ORM vs vote vs beam search by tokens spent."
)
MAX_LEN = 64  # the longest scratchpad completion is 52 characters + eos
STEP_LEN = 32  # the longest next step, "</think><answer>45</answer>" + eos, is 28 tokens


def sample(
    model,
    tokenizer,
    examples,
    n: int,
    seed: int = 0,
    temperature: float = 1.0,
    batch_size: int = 512,
) -> list[list[str]]:
    """n completions per scratchpad example, T = ``temperature``
    (:func:`~labkit.runs.evaluate.probe`): texts [P][n]."""
    return probe(
        model,
        tokenizer,
        scratchpad(),
        examples=examples,
        samples=n,
        temperature=temperature,
        max_completion_length=MAX_LEN,
        seed=seed,
        batch_size=batch_size,
    ).by_prompt(n)


@functools.cache
def scratchpad():
    """The scratchpad task, built once (its verifier judges :func:`sample`'s completions)."""
    return get_task("scratchpad")


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
    from labkit.runs.evaluate import pass_at_k

    n = correct.shape[1]
    return torch.tensor([pass_at_k(n, int(c), N) for c in correct.sum(-1)])  # [P]


def _next_step(prefix: str, completion: str, prompt: str):
    """Cut ``prefix + completion`` after the next process step: (text, finished)."""
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
        cut = [_next_step(b, c, examples[i].prompt) for (i, b), c in zip(items, conts)]
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


def curves(texts, examples, verifiers: dict, Ns, subsets: int = 32, seed: int = 0):
    """One row per (method, N): accuracy (mean over prompts), its standard error, tokens per
    prompt (N x mean length). ``verifiers``: name -> (StepVerifier, aggregate)."""
    import pandas as pd

    values, target, lengths = table(texts, examples)
    correct = values == target[:, None]  # [P, n]
    gen = torch.Generator().manual_seed(seed)
    scored = {
        name: verifier_scores(v, texts, examples, agg) for name, (v, agg) in verifiers.items()
    }  # name -> [P, n]
    rows = []
    for N in Ns:
        acc = {
            "pass@N (oracle)": pass_at(correct, N),
            "majority vote": majority_at_k(values, target, N, subsets, gen),
        }
        acc |= {
            f"best-of-N, {k}": best_of_n(s, correct, N, subsets, gen) for k, s in scored.items()
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


def fit_verifiers(
    model,
    tokenizer,
    task,
    prompts: int,
    per_prompt: int,
    steps: int,
    seed: int = 0,
    kinds=("prm", "orm"),
) -> dict:
    """Sample ``per_prompt`` completions on ``prompts`` train prompts from the policy, train a
    PRM and an ORM (or only ``kinds``) on their labels: {"prm", "orm", "data", "history"}."""
    texts = sample(model, tokenizer, task.train[:prompts], per_prompt, seed + 10)
    data = [(e.prompt, c) for e, row in zip(task.train[:prompts], texts) for c in row]
    out = {"data": data, "history": {}}
    for kind in kinds:
        out[kind], out["history"][kind] = train_verifier(
            model, tokenizer, data, kind, steps=steps, seed=seed
        )
    return out


def run(
    fast: bool = False,
    seed: int = 0,
    policy: str = "tiny-think",
    prompts: int | None = None,
    n: int | None = None,
    width: int = 2,
    expand: int = 4,
    widths: tuple | None = None,
    verifier_prompts: int | None = None,
    verifier_steps: int | None = None,
) -> dict:
    """Train a PRM and an ORM on the policy's own samples, then compare best-of-N (by each),
    majority vote and pass@N on held-out prompts, and a PRM-guided beam search.

    Full: verifiers on 500 prompts x 4 samples, 150 steps; 200 held-out prompts x 16 samples;
    beam widths 1, 2, 4 (x ``expand``). Fast: 64 x 2, 15 steps; 24 x 8; width 2.
    """
    torch.manual_seed(seed)
    model, tok = load_policy(policy)
    task = get_task("scratchpad")
    v = fit_verifiers(
        model,
        tok,
        task,
        verifier_prompts or (64 if fast else 500),
        2 if fast else 4,
        verifier_steps or (15 if fast else 150),
        seed,
    )
    P, n = prompts or (24 if fast else 200), n or (8 if fast else 16)
    ex = task.heldout[:P]
    texts = sample(model, tok, ex, n, seed + 1)
    Ns = [N for N in (1, 2, 4, 8, 16, 32) if N <= n]
    verifiers = {
        "ORM": (v["orm"], "last"),
        "PRM min": (v["prm"], "min"),
        "PRM prod": (v["prm"], "prod"),
    }
    df = curves(texts, ex, verifiers, Ns, seed=seed + 2)
    beam = []
    for w in widths or ((width,) if fast else (1, 2, 4)):
        ok, tokens = beam_search(model, tok, v["prm"], ex, w, expand, seed=seed + 3)
        beam.append(
            {
                "method": "beam search, PRM min",
                "N": w * expand,
                "accuracy": float(ok.float().mean()),
                "se": float(ok.float().std() / P**0.5),
                "tokens/prompt": float(tokens.mean()),
                "width": w,
            }
        )
    held = [(e.prompt, c) for e, row in zip(ex, texts) for c in row]
    quality = {k: verifier_quality(v[k], held) for k in ("prm", "orm")}
    cfg = {
        "policy": policy,
        "prompts": P,
        "n": n,
        "seed": seed,
        "expand": expand,
        "verifier_samples": len(v["data"]),
    }
    return {"curves": df, "beam": beam, "quality": quality, "config": cfg, "verifiers": v}


def verdict(results: dict) -> str:
    """Plain words with the numbers: does best-of-N by a learned verifier beat one sample
    (pass@1), does the PRM beat the ORM and the vote at the largest N, and where does beam
    search sit against best-of-N at its token budget?"""
    df = results["curves"].set_index(["method", "N"])["accuracy"]
    N = int(results["curves"]["N"].max())
    one = df[("pass@N (oracle)", 1)]
    prm = max(df[("best-of-N, PRM min", N)], df[("best-of-N, PRM prod", N)])
    orm, vote, oracle = (df[(m, N)] for m in ("best-of-N, ORM", "majority vote", "pass@N (oracle)"))
    lines = [
        (
            f"one sample (pass@1) {one:.3f}; at N = {N}: best-of-N by PRM {prm:.3f}, by ORM "
            f"{orm:.3f}, majority vote {vote:.3f}, pass@N (oracle) {oracle:.3f}."
        )
    ]
    for b in results["beam"]:
        lines.append(
            f"beam search (width {b['width']} x {results['config']['expand']}): "
            f"{b['accuracy']:.3f} for {b['tokens/prompt']:.0f} tokens per prompt."
        )
    best = max(prm, orm)
    wins = best > one + 0.02
    lines.append(
        f"{'REPRODUCED' if wins else 'NOT REPRODUCED'}: best-of-{N} with a "
        f"verifier-trained ranker {'beats' if wins else 'does not beat'} a single "
        f"sample ({best:.3f} vs {one:.3f})."
    )
    lines.append(
        ("REPRODUCED" if prm > orm + 0.01 and prm > vote + 0.01 else "NOT REPRODUCED")
        + f": PRM ranking vs ORM and vote at N = {N} ({prm:.3f} vs {orm:.3f}, {vote:.3f})."
    )
    return "\n".join(lines)
