"""The small student of lab 93: distilled from the teacher's traces, or trained by RL on equal
compute (``labkit.experiments.compute``), both from the same pretrained base.

DeepSeek-R1 (arXiv 2501.12948, sec. 4.1) fine-tunes small dense models on R1's curated samples
(SFT only) and compares them with the same small model trained by large-scale RL. Here:

  base       a hidden-64, 2-layer Llama (~0.12 M parameters, :func:`student_policy`) from
             random init, SFT on direct answers (``<answer>25</answer>``) so it knows the format
  distilled  SFT on the teacher's kept traces (``DISTIL_LR``, 64 pairs a step), probed at each
             quarter of its steps
  RL         GRPO with the teacher's rewards (``r1_pipeline.RL``) until it has spent the
             distillation's compute (:func:`distil_units`), probed at each quarter of it

Every function that needs the task takes ``task=`` (a name or a
:class:`~labkit.tasks.base.Task`; default ``"scratchpad"``, lab 93's first set-up);
``labkit.experiments.distill_graded`` passes the graded task's two-digit cells.
"""

from __future__ import annotations

import functools

import pandas as pd
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from labkit.algos.sft import SFTTrainer
from labkit.experiments.arms import Probes, grpo_run
from labkit.experiments.claims import Claim
from labkit.experiments.compute import ComputeBudget, rl_spent, sft_units
from labkit.experiments.harness import resume_or_start
from labkit.models.policy import char_tokenizer, tiny_config
from labkit.runs.log import load_jsonl, runs_root, save_jsonl
from labkit.tasks import get_task
from labkit.tasks.graded import Graded, graded_target
from labkit.tasks.scratchpad import target

BATCH = 64
"""Sequences a step, SFT and RL alike (RL: 16 prompts x G = 4)."""
PRETRAIN_LR = 3e-3
"""The base's SFT on direct answers, from random init (the cold starts' rate)."""
DISTIL_LR = 3e-3
"""Distillation's rate: the student learns a format it has never written, as the cold starts
did from random init at this rate (the teacher's own SFT stage, on a model that already thinks,
uses ``r1_pipeline.SFT_LR``)."""
QUARTERS = (0.25, 0.5, 0.75, 1.0)
"""Where both students are probed: fractions of the distillation's steps / of the compute."""


PLATEAU_NOTE = (
    "Reproduced: below it (past its top); inconclusive: level within noise, which meets the "
    "precondition too; not reproduced: above it, still rising, so the step budget would decide "
    "the comparison."
)
COMPUTE_NOTE = (
    "Compute over the budget fixed before the run: the RL student stops at the first step that "
    "reaches it; the distillation's is the expected size of its batches"
)


def plateau_claim(arm: str, probe: str) -> Claim:
    """The comparison's precondition, stated for both of lab 93's set-ups: the distilled student
    ``arm`` has stopped rising by its end (its ``probe``, in words, against the best of the
    probes at 1/4, 1/2 and 3/4 of its steps)."""
    return Claim(
        "distil-plateau",
        "the distilled student has stopped rising: its end is no higher than its best earlier "
        "quarter",
        "the comparison's precondition (distillation given the steps it needs), not a claim of "
        "the paper",
        metric="student accuracy, end - best earlier quarter",
        arm=arm,
        direction=-1,
        note=f"{probe} at the end minus the best of the probes at 1/4, 1/2 and 3/4 of the "
        f"steps. {PLATEAU_NOTE}",
    )


def equal_compute_claim(rl_arm: str, distill_arm: str, extra: str = "") -> Claim:
    """The comparison's set-up: both students spend the budget (``labkit.experiments.compute``)
    within 5 %; ``extra`` ends the note."""
    return Claim(
        "equal-compute",
        "the two students spend the same compute",
        "the comparison's set-up (labkit.experiments.compute), not a claim of the paper",
        metric="student compute / budget",
        arm=rl_arm,
        baseline=distill_arm,
        direction=0,
        margin=0.05,
        note=f"{COMPUTE_NOTE}{extra}.",
    )


def student_policy(seed: int = 0):
    """A smaller char-level Llama than ``tiny_config()``: hidden 64, 2 layers, MLP 192."""
    tok = char_tokenizer()
    torch.manual_seed(seed)
    d = tiny_config(len(tok)).to_dict() | {
        "hidden_size": 64,
        "intermediate_size": 192,
        "num_hidden_layers": 2,
    }
    d.pop("head_dim", None)  # derived again from hidden_size / heads
    return LlamaForCausalLM(LlamaConfig(**d)), tok


def sft(
    model: str,
    pairs,
    run_name: str,
    *,
    steps: int,
    seed: int,
    tick,
    lr: float,
    until=None,
    task="scratchpad",
):
    """An SFT run on ``pairs`` (``BATCH`` a step, constant ``lr``, no warm-up) from the policy
    ``model`` (a name or a folder), resumable."""
    if not pairs:
        raise ValueError(f"{run_name}: no pairs to fine-tune on (rejection sampling kept none)")
    return resume_or_start(
        SFTTrainer,
        run_name,
        steps,
        tick,
        until=until,
        model=model,
        pairs=pairs,
        task=task,
        max_steps=steps,
        seed=seed,
        batch_size=BATCH,
        learning_rate=lr,
        warmup_steps=0,
        save_steps=max(1, steps // 3),
    )


def saved(trainer) -> str:
    """Save a run's final model beside it (``final/``); the folder, a policy name."""
    path = trainer.log.path / "final"
    trainer.model.save_pretrained(path)
    trainer.tokenizer.save_pretrained(path)
    return str(path)


def base(run: str, steps: int, seed: int, tick, task="scratchpad") -> str:
    """The student from random init (saved as ``<run>.student-init``), pretrained by SFT on
    every train prompt's direct answer; its folder. Same seed, same base in both arms."""
    task, init = get_task(task), runs_root() / f"{run}.student-init"
    m, tok = student_policy(seed)
    m.save_pretrained(init)
    tok.save_pretrained(init)
    direct = [(e.prompt, solution(task, e, think=False)) for e in task.train]
    t = sft(
        str(init),
        direct,
        f"{run}.student-base",
        steps=steps,
        seed=seed,
        tick=tick,
        lr=PRETRAIN_LR,
        task=task,
    )
    return saved(t)


def solution(task, example, think: bool) -> str:
    """The correct completion of ``example`` (a thought of running sums in digits, or the
    answer alone): ``scratchpad``'s :func:`~labkit.tasks.scratchpad.target`, or ``graded``'s
    :func:`~labkit.tasks.graded.graded_target` with the example's digits.

    >>> solution(Graded(n_train=6), Graded.example([12, 34], 2), think=True)
    '<think>12+30=42 42+4=46</think><answer>46</answer>'
    """
    ops = task.operands(example.prompt)
    if isinstance(task, Graded):
        return graded_target(ops, example.columns["digits"], think=think)
    return target(ops, think=think)


def thought_pairs(task="scratchpad") -> list[tuple[str, str]]:
    """Every train prompt of ``task`` with its correct thought in digits: what a kept trace
    looks like."""
    task = get_task(task)
    return [(e.prompt, solution(task, e, think=True)) for e in task.train]


def distil_units(steps: int, task="scratchpad") -> float:
    """The distillation's compute, fixed before any run: ``steps`` x ``BATCH`` pairs of the
    mean size of a correct digits thought (:func:`thought_pairs`), 3 units a token."""
    return steps * BATCH * _thought_units(task)


@functools.cache
def _thought_units(task="scratchpad") -> float:
    pairs = thought_pairs(task)
    return sft_units(pairs) / len(pairs)


@functools.cache
def prompt_tokens(task="scratchpad") -> float:
    """Mean prompt length of ``task``'s train prompts (characters: tokens of the char
    tokenizer). Cached by ``task``: pass the same name or the same Task object."""
    task = get_task(task)
    return sum(len(e.prompt) for e in task.train) / len(task.train)


def record(trainer, row: dict) -> None:
    """Add ``row`` to the run's ``probes.jsonl`` (replacing one at the same ``at``)."""
    path = trainer.log.path / Probes.FILE
    rows = [r for r in load_jsonl(path) if r["at"] != row["at"]] if path.exists() else []
    save_jsonl(path, sorted([*rows, row], key=lambda r: r["at"]))


def distil(
    base_dir: str, pairs, run: str, *, steps: int, seed: int, probe, tick, task="scratchpad"
):
    """SFT of the base on the teacher's ``pairs``, probed (``probe(model, tok)`` -> dict) at
    each quarter of ``steps``: (trainer, probes by quarter, the compute it spent)."""
    quarter = {max(1, round(f * steps)): f for f in QUARTERS}

    def at(t) -> bool:
        if t.global_step in quarter:
            row = {"at": quarter[t.global_step], "step": t.global_step}
            record(t, row | probe(t.model, t.tokenizer))
        return False

    t = sft(
        base_dir, pairs, run, steps=steps, seed=seed, tick=tick, lr=DISTIL_LR, until=at, task=task
    )
    spent = steps * BATCH * sft_units(pairs) / len(pairs)  # the expected pass: drawn uniformly
    return t, pd.DataFrame(load_jsonl(t.log.path / Probes.FILE)), spent


def rl(
    base_dir: str,
    run: str,
    *,
    units: float,
    max_steps: int,
    seed: int,
    probe,
    tick,
    task="scratchpad",
    **setup,
):
    """GRPO from the base until it has spent ``units`` (at most ``max_steps``), probed at each
    quarter of ``units``: (trainer, probes, the compute it spent)."""
    at = lambda f, t: record(t, {"at": f, "step": t.global_step, **probe(t.model, t.tokenizer)})
    budget = ComputeBudget(units, BATCH, prompt_tokens(task), QUARTERS, at)
    t = grpo_run(
        base_dir,
        {},
        seed=seed,
        steps=max_steps,
        run_name=run,
        tick=tick,
        until=budget,
        task=task,
        track_kl=False,
        save_steps=max(1, max_steps // 6),
        **setup,
    )
    spent = rl_spent(t.log.metrics, BATCH, prompt_tokens(task))
    if spent < units:  # stopped by max_steps: probe where it ended
        record(
            t, {"at": round(spent / units, 3), "step": t.global_step, **probe(t.model, t.tokenizer)}
        )
    path = t.log.path / Probes.FILE
    return t, pd.DataFrame(load_jsonl(path) if path.exists() else []), spent


def summary(probes: pd.DataFrame, compute: float, steps: int) -> dict:
    """The student's held-out accuracy and think rate at the end, its accuracy at each quarter
    (of the distillation's steps or of the RL run's compute), the gain over its last quarter
    (the plateau check), its compute relative to the budget and its steps.

    >>> p = pd.DataFrame({"at": [0.25, 0.5, 0.75, 1.0], "accuracy": [0.1, 0.3, 0.4, 0.42],
    ...                   "think_rate": [1.0] * 4})
    >>> s = summary(p, 1.01, 400)
    >>> s["student accuracy"], round(s["student accuracy, last quarter's gain"], 3)
    (0.42, 0.02)
    """
    p = probes.set_index("at")
    out = {
        f"student accuracy at {f:.0%} compute": float(p["accuracy"].get(f, float("nan")))
        for f in QUARTERS
    }
    last = p.iloc[-1]
    return out | {
        "student accuracy": float(last["accuracy"]),
        "student think rate": float(last["think_rate"]),
        "student accuracy, last quarter's gain": float(
            last["accuracy"] - p["accuracy"].get(0.75, float("nan"))
        ),
        "student accuracy, end - best earlier quarter": float(
            last["accuracy"] - p["accuracy"].iloc[:-1].max()
        ),
        "student compute / budget": compute,
        "student steps": steps,
    }


def curves(summaries: pd.DataFrame) -> pd.DataFrame:
    """Each student's held-out accuracy at each quarter of its budget, one row per (arm, seed,
    quarter) with ``step`` the percent of the budget (0: the base), for ``seeds.band_figure``.

    >>> s = pd.DataFrame({"arm": ["student RL"], "seed": [0], "student base accuracy": [0.4],
    ...     **{f"student accuracy at {f:.0%} compute": [0.5] for f in QUARTERS}})
    >>> curves(s)[["step", "student accuracy"]].values.tolist()[:2]
    [[0.0, 0.4], [25.0, 0.5]]
    """
    rows = []
    for _, r in summaries.iterrows():
        at = {0.0: r["student base accuracy"]}
        at |= {100 * f: r[f"student accuracy at {f:.0%} compute"] for f in QUARTERS}
        rows += [
            {"arm": r["arm"], "seed": r["seed"], "step": k, "student accuracy": v}
            for k, v in at.items()
        ]
    return pd.DataFrame(rows)
