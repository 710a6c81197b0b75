"""The DeepSeek-R1 pipeline at toy scale, and distillation into a smaller student.

DeepSeek-R1 (arXiv 2501.12948, section 2.3): (1) cold-start SFT on a few long chains of
thought; (2) reasoning RL with rule rewards, r = r_acc + r_format; (3) rejection sampling from
the RL checkpoint: keep the verified-correct, well-formed traces,
    D_RS = {(q, o) : o ~ pi_RL(. | q), acc(o) = 1, <think> present};
(4) SFT of the base on D_RS; (5) a second RL stage. Section 4.1: distilling R1's traces into a
small dense model (SFT only) beats the same small model trained by large-scale RL.

Departures, and why:
- Stage 1 is the shipped ``tiny-think`` (scripts/make_scratchpad_checkpoint.py), not run here.
- Stage 4 fine-tunes the cold start, not a random-init "base": retraining the 0.9 M model from
  scratch costs ~1000 SFT steps (minutes), more than the whole lab; R1 also keeps its base's
  pretraining, which our random init does not have. No non-reasoning SFT data is mixed in.
- r = answer_match + 0.5 think_format (R1 gives no weights); beta = 0, mu = 1 (``SETUP``).
- The student (hidden 64, 2 layers, ~0.1 M parameters) is first "pretrained" by SFT on direct
  answers (``<answer>25</answer>``) so that it knows the output format; then the same number
  of optimisation steps of SFT on the teacher's (stage 3's) traces, or of GRPO.
- Accuracy, think rate, length: held-out probe, one sample at T = 1 (:func:`probe`).
"""

from __future__ import annotations

import copy
import random
import time

import pandas as pd
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from labkit.algos.grpo import GRPOTrainer
from labkit.algos.rejection import rejection_sample
from labkit.algos.sft import SFTTrainer
from labkit.experiments.dapo import beats
from labkit.experiments.harness import slug
from labkit.models.policy import char_tokenizer, load_policy, tiny_config
from labkit.tasks import get_task
from labkit.tasks.scratchpad import target

CLAIM = (
    "DeepSeek-R1 (DeepSeek-AI 2025, arXiv 2501.12948, sections 2.3 and 4.1): cold-start SFT "
    "-> reasoning RL -> rejection sampling of correct, well-formed traces -> SFT -> RL again "
    "improves each stage; and a small model distilled (SFT) on the big model's traces beats "
    "the same small model trained by RL."
)
COLD = "tiny-think"
SETUP = {
    "reward_funcs": ["answer_match"],
    "learning_rate": 3e-4,
    "num_iterations": 1,
    "num_generations": 4,
    "prompts_per_step": 16,
    "beta": 0.0,
    "max_completion_length": 64,
}
"""The RL stages' set-up on ``scratchpad`` (16 prompts x G = 4, mu = 1, beta = 0)."""
RL = SETUP | {"reward_funcs": ["answer_match", "think_format"], "reward_weights": [1.0, 0.5]}
"""Both RL stages (and the student's RL): R1's accuracy + format rewards."""
SFT_LR = 1e-3
"""Learning rate of the SFT stages (the cold start used 3e-3 from random init)."""


def probe(model, tok, task, n_eval: int, seed: int) -> dict:
    """Held-out probe (one sample per prompt, T = 1): accuracy, think rate, mean length."""
    s = rejection_sample(
        model,
        tok,
        task,
        task.heldout[:n_eval],
        1,
        seed=seed,
        max_completion_length=SETUP["max_completion_length"],
    ).stats()
    return {k: s[k] for k in ("accuracy", "think_rate", "len_mean")}


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


def rl(model, tok, steps: int, seed: int, name: str):
    """GRPO stage with ``RL``'s rewards from ``(model, tok)``; returns the trainer."""
    t = GRPOTrainer(
        model,
        task="scratchpad",
        tokenizer=tok,
        track_kl=False,
        seed=seed,
        max_steps=steps,
        run_name="lab93-" + slug(name),
        save_steps=0,
        **RL,
    )
    t.algorithm = name
    t.train(progress=False)
    return t


def sft_on(model, tok, pairs, steps: int, seed: int, name: str, lr: float = SFT_LR):
    """SFT stage on ``pairs`` (64 a step, constant ``lr``); returns the trainer."""
    if not pairs:
        raise ValueError(f"{name}: no pairs to fine-tune on (rejection sampling kept none)")
    t = SFTTrainer(
        model,
        pairs,
        task="scratchpad",
        tokenizer=tok,
        max_steps=steps,
        seed=seed,
        batch_size=64,
        learning_rate=lr,
        warmup_steps=0,
        run_name="lab93-" + slug(name),
        save_steps=0,
    )
    t.algorithm = name
    t.train(progress=False)
    return t


def budget(fast: bool) -> dict:
    """Steps per stage: full (~8-10 min on one thread) or fast (seconds)."""
    if fast:
        return {"rl1": 3, "rs_prompts": 64, "sft": 4, "rl2": 2, "pretrain": 20, "student": 3}
    return {"rl1": 40, "rs_prompts": 512, "sft": 60, "rl2": 30, "pretrain": 300, "student": 40}


def run(
    fast: bool = False, seed: int = 0, heldout: int | None = None, model=COLD, student: bool = True
) -> dict:
    """The pipeline's stages from ``model``, each probed on held-out prompts, then (with
    ``student``) the student's three rows. Returns ``{"runs": {name: RunLog}, "table":
    DataFrame, "rejection": stats dict, "config": dict}``."""
    b, n_eval = budget(fast), heldout or (64 if fast else 400)
    task, rows, runs = get_task("scratchpad"), [], {}

    def row(stage, m, tok, t0, samples):
        rows.append(
            {
                "stage": stage,
                **_named(probe(m, tok, task, n_eval, seed + 1)),
                "samples drawn": samples,
                "wall s": time.perf_counter() - t0,
            }
        )

    t0 = time.perf_counter()
    cold, tok = load_policy(model) if isinstance(model, str) else model
    row("1 cold start (SFT)", cold, tok, t0, 0)
    t0, per = time.perf_counter(), RL["prompts_per_step"] * RL["num_generations"]
    t = rl(
        load_policy(model)[0] if isinstance(model, str) else _copy(cold),
        tok,
        b["rl1"],
        seed,
        "2 reasoning RL",
    )
    runs[t.algorithm] = t.log
    row(t.algorithm, t.model, tok, t0, b["rl1"] * per)
    t0 = time.perf_counter()
    rng = random.Random(seed)
    rs = rejection_sample(
        t.model,
        tok,
        task,
        [rng.choice(task.train) for _ in range(b["rs_prompts"])],
        RL["num_generations"],
        keep="correct_think",
        seed=seed,
        max_completion_length=RL["max_completion_length"],
    )
    s = sft_on(_copy(cold), tok, rs.pairs, b["sft"], seed, "3-4 rejection sampling + SFT")
    row(s.algorithm, s.model, tok, t0, len(rs.completions))
    t0 = time.perf_counter()
    t2 = rl(s.model, tok, b["rl2"], seed, "5 second RL")
    runs[t2.algorithm] = t2.log
    row(t2.algorithm, t2.model, tok, t0, b["rl2"] * per)
    if student:
        runs |= students(rs.pairs, b, seed, row)
    return {
        "runs": runs,
        "table": pd.DataFrame(rows).set_index("stage"),
        "rejection": rs.stats(),
        "config": {"seed": seed, "heldout": n_eval, "model": str(model), **b, **RL},
    }


def students(pairs, b: dict, seed: int, row) -> dict:
    """The student pretrained on direct answers, then distilled (SFT on ``pairs``) or
    trained by GRPO for the same number of steps; adds three rows, returns the RL run."""
    task, t0 = get_task("scratchpad"), time.perf_counter()
    m, tok = student_policy(seed)
    direct = [(e.prompt, target(task.operands(e.prompt), think=False)) for e in task.train]
    base = sft_on(m, tok, direct, b["pretrain"], seed, "student base", lr=3e-3).model
    row("student: base (direct answers)", base, tok, t0, 0)
    t0 = time.perf_counter()
    d = sft_on(_copy(base), tok, pairs, b["student"], seed, "student: distilled (SFT)")
    row(d.algorithm, d.model, tok, t0, 0)
    t0 = time.perf_counter()
    r = rl(_copy(base), tok, b["student"], seed, "student: RL")
    row(
        r.algorithm, r.model, tok, t0, b["student"] * RL["prompts_per_step"] * RL["num_generations"]
    )
    return {r.algorithm: r.log}


def _copy(model):
    """A deep copy (trainers change their model in place)."""
    return copy.deepcopy(model)


def _named(p: dict) -> dict:
    return {
        "held-out accuracy": p["accuracy"],
        "think rate": p["think_rate"],
        "len/mean": p["len_mean"],
    }


def verdict(results: dict) -> str:
    """Each stage against the one before (held-out accuracy beyond two standard errors,
    :func:`~labkit.experiments.dapo.beats`), rejection-sampled SFT against the cold start,
    and the distilled student against the RL student."""
    t, n = results["table"]["held-out accuracy"], results["config"]["heldout"]
    stages = list(t.index)
    checks = [(stages[i], stages[i - 1]) for i in (1, 3)]
    checks += [
        ("3-4 rejection sampling + SFT", "1 cold start (SFT)"),
        ("student: distilled (SFT)", "student: RL"),
    ]
    lines = []
    for a, b in checks:
        if a in t.index and b in t.index:
            ok = beats(t[a], t[b], n)
            lines.append(
                f"{'REPRODUCED' if ok else 'NOT REPRODUCED'}: {a} beats {b} "
                f"(held-out accuracy {t[a]:.3f} vs {t[b]:.3f}, {n} prompts)."
            )
    return "\n".join(lines)
