"""Search at test time on the scratchpad task: best-of-N by a learned verifier, majority vote
and a PRM-guided beam search, against one sample and pass@N (the oracle), by tokens spent.

One run (one seed): sample ``per_prompt`` completions of ``tiny-think`` on train prompts, fit a
PRM (every step's exact label) and an ORM (the answer's label only) on them
(``labkit.algos.verifier``); draw n completions of each held-out prompt and rank them for
N <= n (:mod:`labkit.experiments.search_rank`); run the beam search at each width
(:mod:`labkit.experiments.search_beam`). No RL: the seed varies the verifiers' training data,
their training, and the held-out samples. The experiment has one arm; each claim is a
difference within a run, one per seed.

Lightman et al. 2023 (arXiv 2305.20050, fig. 3): best-of-N by a PRM (the product of its step
probabilities, their sec. 2.6) beats an ORM and majority vote. Snell et al. 2024 (arXiv
2408.03314, sec. 5): PRM-guided beam search beats best-of-N at small budgets; compared here at
the same tokens per prompt (best-of-N's accuracy read off its curve, linear in log tokens).
"""

from __future__ import annotations

import functools

import pandas as pd
import torch

from labkit.algos.verifier import VerifierTrainer, verifier_quality
from labkit.experiments import search_rank
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, Outcome
from labkit.experiments.search_beam import beam_search
from labkit.models.policy import load_policy
from labkit.runs.evaluate import probe
from labkit.tasks import get_task

CLAIM = (
    "Spending compute at test time buys accuracy, and a process verifier spends it best. "
    "Lightman et al. 2023 (arXiv 2305.20050, fig. 3): best-of-N ranked by a PRM solves more MATH "
    "problems than ranked by an ORM or by majority vote, the gap growing with N. Snell et al. "
    "2024 (arXiv 2408.03314): PRM-guided beam search beats best-of-N at small budgets."
)
POLICY = "tiny-think"
MAX_LEN = 64  # the longest scratchpad completion is 52 characters + eos
FULL_STEPS = 150
"""The verifiers' training steps in the full run (the stored result's)."""
SIZES = {
    "full": {
        "verifier_prompts": 500,
        "per_prompt": 4,
        "prompts": 200,
        "n": 16,
        "widths": (1, 2, 4),
    },
    "live": {"verifier_prompts": 200, "per_prompt": 4, "prompts": 100, "n": 16, "widths": (1,)},
    "fast": {"verifier_prompts": 64, "per_prompt": 2, "prompts": 24, "n": 8, "widths": (1,)},
}
"""Verifier data (train prompts x samples each), held-out prompts x n samples, beam widths.
A run's ``steps`` are the verifiers' training steps; a run of fewer than ``FULL_STEPS`` (the
live cell's) samples less too (:func:`sizes`)."""
EXPAND = 4
"""Next steps sampled per beam and round."""
NS = (1, 2, 4, 8, 16, 32)
"""The N of best-of-N (up to n)."""
ARMS = {"tiny-think": {}}
RANKERS = {"ORM": ("orm", "last"), "PRM min": ("prm", "min"), "PRM prod": ("prm", "prod")}
"""Ranker name -> (verifier, how its step probabilities score a solution)."""


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


def fit_verifiers(
    model,
    tokenizer,
    task,
    prompts: int,
    per_prompt: int,
    steps: int,
    seed: int = 0,
    kinds=("prm", "orm"),
    run_name: str | None = None,
    tick=None,
) -> dict:
    """Sample ``per_prompt`` completions on ``prompts`` train prompts from the policy, train a
    verifier of each of ``kinds`` on their labels (``labkit.algos.verifier``): {kind:
    StepVerifier, "data": pairs}. With ``run_name``, the first is logged as that run (its
    ``step_accuracy`` is the live figure's), the others as ``<run_name>.<kind>``;
    ``tick(done, total)`` after every training step of each."""
    texts = sample(model, tokenizer, task.train[:prompts], per_prompt, seed + 10)
    data = [(e.prompt, c) for e, row in zip(task.train[:prompts], texts) for c in row]
    out = {"data": data}
    for i, kind in enumerate(kinds):
        name = run_name if i == 0 or run_name is None else f"{run_name}.{kind}"
        tr = VerifierTrainer(
            model,
            data=data,
            kind=kind,
            tokenizer=tokenizer,
            max_steps=steps,
            seed=seed,
            run_name=name,
        )
        tr.train(progress=False, callback=_after(tick, i * steps, len(kinds) * steps))
        tr.log.close()
        out[kind] = tr.model.eval()
    return out


def _after(tick, before: int, total: int):
    """A trainer callback that moves ``tick`` by the steps done after ``before``."""
    if tick is None:
        return None
    return lambda trainer, metrics: tick(before + trainer.global_step, total)


def sizes(steps: int, fast: bool) -> dict:
    """The run's sizes: ``fast`` (CI), full at ``FULL_STEPS`` or more, else live.

    >>> sizes(150, False)["prompts"], sizes(60, False)["prompts"], sizes(15, True)["prompts"]
    (200, 100, 24)
    """
    return SIZES["fast" if fast else "full" if steps >= FULL_STEPS else "live"]


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One seed: fit the verifiers (``steps`` steps each; the PRM logged as ``run_name``), rank
    n held-out samples per prompt for every N <= n, run the beam search at each width;
    summarised by :func:`summary`, the curves one row per N."""
    size, task = sizes(steps, fast), scratchpad()
    torch.manual_seed(seed)
    model, tok = load_policy(POLICY)
    half = lambda done, total: tick(round(steps * done / (2 * total)), steps)
    v = fit_verifiers(
        model,
        tok,
        task,
        prompts=size["verifier_prompts"],
        per_prompt=size["per_prompt"],
        steps=steps,
        seed=seed,
        run_name=run_name,
        tick=half,
    )
    ex = task.heldout[: size["prompts"]]
    texts = sample(model, tok, ex, size["n"], seed + 1)
    rankers = {k: (v[kind], agg) for k, (kind, agg) in RANKERS.items()}
    df = search_rank.curves(texts, ex, rankers, [N for N in NS if N <= size["n"]], seed=seed + 2)
    tick(round(0.6 * steps), steps)
    beams = {}
    for w in size["widths"]:
        ok, tokens = beam_search(model, tok, v["prm"], ex, width=w, expand=EXPAND, seed=seed + 3)
        beams[w] = (float(ok.float().mean()), float(tokens.mean()))
    held = [(e.prompt, c) for e, row in zip(ex, texts) for c in row]
    quality = {k: verifier_quality(v[k], held) for k in ("prm", "orm")}
    tick(steps, steps)
    wide = df.pivot(index="N", columns="method", values="accuracy")
    wide["tokens/prompt"] = df.groupby("N")["tokens/prompt"].first()
    return Outcome(summary(df, beams, quality), wide.reset_index().rename(columns={"N": "step"}))


def summary(df: pd.DataFrame, beams: dict, quality: dict) -> dict:
    """Accuracy of one sample and of each method at the largest N (n), the differences the
    claims are judged on, each beam width's accuracy and tokens against best-of-N by the same
    PRM score at the same tokens, and the verifiers' held-out quality."""
    acc = df.set_index(["method", "N"])["accuracy"]
    n, one = int(df["N"].max()), float(acc[(search_rank.ORACLE, 1)])
    at_n = {m: float(acc[(m, n)]) for m in df["method"].unique()}
    out = {"pass@1": one, "pass@n (oracle)": at_n[search_rank.ORACLE]}
    out["majority vote @n"] = at_n[search_rank.VOTE]
    out |= {f"{k} @n": at_n[f"best-of-N, {k}"] for k in RANKERS}
    out["ORM - pass@1"] = out["ORM @n"] - one
    out["PRM prod - pass@1"] = out["PRM prod @n"] - one
    out["PRM prod - ORM"] = out["PRM prod @n"] - out["ORM @n"]
    out["PRM prod - majority vote"] = out["PRM prod @n"] - out["majority vote @n"]
    prm = df[df["method"] == "best-of-N, PRM min"]
    for w, (a, tokens) in beams.items():
        same = search_rank.at_budget(prm["tokens/prompt"], prm["accuracy"], tokens)
        out |= {f"beam width {w}": a, f"beam width {w} tokens": tokens}
        out[f"beam width {w} - best-of-N, same tokens"] = a - same
    out["PRM answer accuracy"] = quality["prm"]["answer accuracy"]
    out["PRM thought-step accuracy"] = quality["prm"]["thought accuracy"]
    out["ORM answer accuracy"] = quality["orm"]["answer accuracy"]
    return out


def by_method(curves: pd.DataFrame, methods=None) -> pd.DataFrame:
    """The stored curves (one column per method, ``step`` = N) as one row per (method, seed,
    N): a method per "arm", for the band figures of accuracy against N.

    >>> c = pd.DataFrame({"arm": ["a"] * 2, "seed": [0, 0], "step": [1, 2],
    ...                   "vote": [0.4, 0.5], "tokens/prompt": [30.0, 60.0]})
    >>> by_method(c)[["arm", "step", "accuracy"]].values.tolist()
    [['vote', 1, 0.4], ['vote', 2, 0.5]]
    """
    skip = ("arm", "seed", "step", "tokens/prompt")
    methods = list(methods or [c for c in curves.columns if c not in skip])
    long = curves.melt(["seed", "step"], methods, var_name="arm", value_name="accuracy")
    return long[["arm", "seed", "step", "accuracy"]]


LIGHTMAN = "Lightman et al. 2023 (2305.20050) fig. 3"
EXPERIMENT = Experiment(
    name="search",
    lab="96_test_time_search",
    arms=ARMS,
    train=train,
    steps=FULL_STEPS,
    fast_steps=15,
    curves=(
        search_rank.ORACLE,
        search_rank.VOTE,
        *(f"best-of-N, {k}" for k in RANKERS),
        "tokens/prompt",
        "step_accuracy",  # the PRM's training, in the live figure only (not stored)
    ),
    claims=(
        Claim(
            "prm-beats-one-sample",
            "best-of-n ranked by a learned PRM beats one sample",
            LIGHTMAN,
            metric="PRM prod - pass@1",
            arm="tiny-think",
        ),
        Claim(
            "orm-beats-one-sample",
            "best-of-n ranked by a learned ORM beats one sample",
            LIGHTMAN,
            metric="ORM - pass@1",
            arm="tiny-think",
        ),
        Claim(
            "prm-beats-orm",
            "a PRM (product of step probabilities) ranks n samples better than an ORM",
            LIGHTMAN,
            metric="PRM prod - ORM",
            arm="tiny-think",
        ),
        Claim(
            "prm-beats-vote",
            "a PRM ranks n samples better than majority vote",
            LIGHTMAN,
            metric="PRM prod - majority vote",
            arm="tiny-think",
        ),
        Claim(
            "beam-small-budget",
            "PRM-guided beam search beats best-of-N at a small budget (the same tokens)",
            "Snell et al. 2024 (2408.03314) sec. 5",
            metric="beam width 1 - best-of-N, same tokens",
            arm="tiny-think",
            note="beam width 1 x 4 expansions, the smallest budget run; best-of-N by the same "
            "PRM score (min over steps)",
        ),
    ),
    seeds=(0, 1, 2, 3, 4),
    live={"seeds": (0, 1), "steps": 60},
)
