"""DAPO piece by piece: naive GRPO, then each of DAPO's four tricks alone, then all of them.

DAPO (Yu et al. 2025, 2503.14476, eq. 8-13), one objective:
    J = E[ 1/sum_i |o_i| sum_i sum_t min(ratio_{i,t} A_i, clip(ratio_{i,t}, 1 - eps_low,
        1 + eps_high) A_i) ]   s.t.  0 < |{o_i correct}| < G,
with clip-higher (eps_low 0.2, eps_high 0.28: a low-probability token may grow more),
dynamic sampling (the constraint: groups all right or all wrong are dropped and more prompts
are drawn), the token-level loss (1/sum_i |o_i| instead of 1/G sum_i 1/|o_i|), and overlong
reward shaping (overlong filtering: truncated samples masked out of the loss; soft overlong
punishment: -((L_max - L_cache) - |o|)/L_cache in the last L_cache tokens, -1 beyond).
Their AIME24 table (REFERENCES.md): naive GRPO 30, + overlong filtering 36, + clip-higher 38,
+ soft overlong punishment 41, + token-level loss 42, + dynamic sampling 50.

Departures, and why:
- The paper adds the pieces cumulatively; here each piece is added ALONE to naive GRPO (so a
  difference is that piece's), plus one run with all of them. Same seed, same step budget.
- The long-completion setup of lab 76 (``labkit.experiments.dr_grpo.SETUP``: ``tiny-babble`` on
  ``addition_ramble``, 16 tokens, binary ``leading_match`` reward), so lengths and truncation
  can move. L_cache = 4 tokens of the 16 (the paper: 4096 of 20480).
- Dynamic sampling stops after ``max_sampling_rounds`` = 3 rounds (the paper samples until the
  batch is full) and, as in the paper, costs more samples per step: we count them.
- "Samples drawn" counts completions generated; wall time is the trainer's own step time on a
  shared 2-core CPU (noisy; compare within one table only).
- Clip fractions (``clip/*``) are not used (recorded from the first inner update, ratio 1).
"""

from __future__ import annotations

import pandas as pd

from labkit.experiments.dr_grpo import SETUP, train
from labkit.runs.evaluate import accuracy

CLAIM = (
    "DAPO (Yu et al. 2025, arXiv 2503.14476): on Qwen2.5-32B, AIME24 avg@32 goes from 30 "
    "(naive GRPO) to 50 with overlong filtering, clip-higher (keeps entropy from collapsing), "
    "soft overlong punishment, the token-level loss and dynamic sampling (more samples per "
    "step, fewer steps to a given accuracy)."
)
NAIVE = {"loss_type": "grpo", "epsilon": 0.2, "epsilon_high": None, "scale_rewards": "group"}
PIECES = {
    "naive GRPO": {},
    "+ overlong filtering": {"mask_truncated_completions": True},
    "+ clip-higher": {"epsilon_high": 0.28},
    "+ soft overlong punishment": {"overlong_buffer": 4, "overlong_penalty": 1.0},
    "+ token-level loss": {"loss_type": "dapo"},
    "+ dynamic sampling": {"dynamic_sampling": True, "max_sampling_rounds": 3},
}
PIECES["DAPO (all)"] = {k: v for p in PIECES.values() for k, v in p.items()}
EQUAL = "+ dynamic sampling, naive's samples"
"""Dynamic sampling again, for as many steps as fit in naive GRPO's sample budget."""


def run(
    fast: bool = False,
    seed: int = 0,
    steps: int | None = None,
    pieces=None,
    heldout: int | None = None,
    progress: bool = True,
) -> dict:
    """Train each variant of ``PIECES`` (full 60 steps, fast 4) and tabulate it; with naive
    GRPO and dynamic sampling among them, also dynamic sampling for the steps that fit in
    naive GRPO's sample budget (``EQUAL``: its own run, with its own learning-rate schedule).

    Returns ``{"runs": {name: RunLog}, "table": DataFrame, "config": dict}``.
    """
    steps = steps or (4 if fast else 60)
    n_eval = heldout or (32 if fast else 400)
    runs, rows = {}, []
    for name in pieces or PIECES:
        trainer, secs = train(name, steps, seed, progress, "lab77-", **(NAIVE | PIECES[name]))
        runs[name] = trainer.log
        rows.append(summary(name, trainer, secs, n_eval, seed))
    if {"naive GRPO", "+ dynamic sampling"} <= runs.keys():
        drawn = samples_drawn(runs["+ dynamic sampling"].metrics)
        n = max(1, int((drawn <= samples_drawn(runs["naive GRPO"].metrics).iloc[-1]).sum()))
        trainer, secs = train(
            EQUAL, n, seed, progress, "lab77-", **(NAIVE | PIECES["+ dynamic sampling"])
        )
        runs[EQUAL] = trainer.log
        rows.append(summary(EQUAL, trainer, secs, n_eval, seed))
    return {
        "runs": runs,
        "table": pd.DataFrame(rows).set_index("variant"),
        "config": {"steps": steps, "seed": seed, "heldout": n_eval, **SETUP},
    }


def summary(name: str, trainer, secs: float, n_eval: int, seed: int) -> dict:
    """One table row: held-out accuracy of the final policy, and the last 10% of steps'
    entropy, truncation and length; samples drawn and wall time of the whole run."""
    m = trainer.log.metrics
    tail = m.iloc[-max(1, len(m) // 10) :]
    model, tok, task = trainer.model, trainer.tokenizer, trainer.task
    acc = accuracy(
        model,
        tok,
        task,
        task.heldout[:n_eval],
        temperature=1.0,
        max_completion_length=SETUP["max_completion_length"],
        seed=seed + 1,
    )
    return {
        "variant": name,
        "held-out accuracy": acc,
        "train accuracy (last 10%)": float(tail["accuracy"].mean()),
        "entropy (last 10%)": float(tail["entropy"].mean()),
        "truncated (last 10%)": float(tail["len/truncated_frac"].mean()),
        "len/mean (last 10%)": float(tail["len/mean"].mean()),
        "samples drawn": int(samples_drawn(m).iloc[-1]),
        "wall s": secs,
    }


def samples_drawn(m: pd.DataFrame) -> pd.Series:
    """Cumulative completions generated by each step: rounds x prompts x G."""
    per_round = SETUP["prompts_per_step"] * SETUP["num_generations"]
    rounds = m["sampling/rounds"] if "sampling/rounds" in m else pd.Series(1, index=m.index)
    return (rounds.fillna(1) * per_round).cumsum()


def efficiency(runs: dict) -> pd.DataFrame:
    """Long frame for the dynamic-sampling plot: per run and step, train accuracy, cumulative
    samples drawn, cumulative step time, and kept fraction of groups. Caveat: with dynamic
    sampling the train accuracy is that of the KEPT groups (neither all right nor all wrong),
    pulled toward 0.5; compare held-out accuracy (the table) across runs."""
    out = []
    for name, log in runs.items():
        m = log.metrics
        out.append(
            pd.DataFrame(
                {
                    "run": name,
                    "step": m["step"],
                    "accuracy": m["accuracy"],
                    "samples drawn": samples_drawn(m),
                    "seconds": m["time/step"].cumsum(),
                    "kept_frac": m.get(
                        "sampling/kept_frac", pd.Series(float("nan"), index=m.index)
                    ),
                }
            )
        )
    return pd.concat(out, ignore_index=True)


def beats(a: float, b: float, n: int) -> bool:
    """Accuracy ``a`` beats ``b`` (each a mean of ``n`` 0/1 outcomes) by more than two
    standard errors of the difference, sqrt(a(1-a)/n + b(1-b)/n).

    >>> beats(0.48, 0.40, 400), beats(0.43, 0.40, 400)
    (True, False)
    """
    return a - b > 2 * ((a * (1 - a) + b * (1 - b)) / n) ** 0.5


def verdict(results: dict) -> str:
    """Per piece, the direction the paper predicts, read off the table against naive GRPO.
    Held-out accuracy counts only beyond two standard errors (:func:`beats`); entropy and
    truncation are compared as measured (one seed)."""
    t, n = results["table"], results["config"]["heldout"]
    base = t.loc["naive GRPO"]
    checks = [
        ("+ clip-higher", "entropy (last 10%)", "clip-higher keeps entropy higher"),
        (
            "+ soft overlong punishment",
            "truncated (last 10%)",
            "soft overlong punishment lowers the truncation rate",
        ),
        (
            "+ dynamic sampling",
            "held-out accuracy",
            "dynamic sampling beats naive GRPO in the same steps",
        ),
        (EQUAL, "held-out accuracy", "dynamic sampling beats naive GRPO with the same samples"),
        ("+ token-level loss", "held-out accuracy", "the token-level loss beats naive GRPO"),
        ("+ overlong filtering", "held-out accuracy", "overlong filtering beats naive GRPO"),
        ("DAPO (all)", "held-out accuracy", "all pieces together beat naive GRPO"),
    ]
    lines = []
    for name, col, what in checks:
        if name not in t.index:
            continue
        a, b = t.loc[name, col], base[col]
        ok = {"entropy (last 10%)": a > b, "truncated (last 10%)": a < b}.get(col)
        ok = beats(a, b, n) if ok is None else ok
        lines.append(
            f"{'REPRODUCED' if ok else 'NOT REPRODUCED'}: {what} "
            f"({col}: {a:.3f} vs naive {b:.3f}; {int(t.loc[name, 'samples drawn'])} "
            f"vs {int(base['samples drawn'])} samples drawn)."
        )
    return "\n".join(lines)
