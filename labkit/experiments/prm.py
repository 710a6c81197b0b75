"""Outcome vs process supervision in GRPO on the scratchpad task, and learned ORM vs PRM rewards.

Four arms from the same cold start (``tiny-think``), the same prompts, steps and learning rate:
- GRPO, outcome: r = answer right (R1's accuracy reward), group z-score advantage;
- GRPO, process: DeepSeekMath's process supervision (Shao et al. 2024, arXiv 2402.03300,
  sec. 4.1.3): step rewards (each scratchpad step, then the answer) normalised over the group,
  A_t = sum_{k: e_k >= t} r~_k (``labkit.algos.process.ProcessGRPOTrainer``);
- GRPO against a learned ORM (its probability that the answer is right), and process GRPO
  against a learned PRM (its step probabilities), each verifier fitted in its run on the cold
  start's own samples (``labkit.algos.verifier``, sampled and trained with the run's seed);
  logged: the learned score the policy climbs and the true accuracy of the same batches (Gao et
  al. 2022, arXiv 2210.10760: over-optimisation of a proxy reward).
PPO with step rewards, and what its critic does with them, is its own experiment
(``labkit.experiments.ppo_critic``, the same lab).

Why the toy lets the effects happen: the cold start thinks on some prompts and answers directly
on others, a forced thought is right more often than a forced direct answer (its card), and
its thoughts hold wrong steps (the right-step share of the cold-start probe: the curves' step
0), so step labels carry information the answer alone does not: a thought whose early steps
are right but whose answer is wrong gets credit for the right steps under process supervision
and none under outcome supervision. What
would falsify the claim: process GRPO ending no higher (or lower) than outcome GRPO on the same
seeds. A learned verifier trained on 1,000 samples of the cold start is an imperfect proxy the
policy can drift away from; if its score and the true accuracy rise together, it was not
over-optimised in this budget.

The rules, fixed before any run: each claim below, paired over the five seeds (the arms share
them), decided by the 95 % Student-t interval of the per-seed differences (``claims``); the
learned-reward claims judge one arm's *proxy gap*: the learned score's rise minus the batch
accuracy's rise, first vs last quarter of the steps.

Summaries: held-out accuracy, think rate, right-step share and truncated share after RL (one
sample at T = 1 on ``HELDOUT`` held-out prompts, the run's seed); the training batches' mean
accuracy over the whole run (how fast it learns: the area under the curve) and over the last
quarter; for a learned reward, its score first and last and the proxy gap. The cold start's
held-out numbers (``PROBE_SEED``, once a process) are the curves' step 0.

Budget: ``steps`` = 25, 5 seeds x 4 arms (``python scripts/run_experiment.py prm --workers 2``),
sized from a pilot that looked at nothing but time (seed 100, one thread, the 2 cores loaded by
other jobs, see ``PILOT``): GRPO 2.7, 2.3, 1.8 s a step (load ~3.6); the held-out probe of 300
prompts 3-5 s; a verifier's data (250 prompts x 4 samples) 12 s and its training 1.5 s a step
at load ~6.7 (a 100-step fit took 171 s there, hence 50 steps). At the load-3.6 rates
(verifier steps ~0.9 s): 20 runs x (25 x 2.0 + 4 s) + 10 fits x (7 + 50 x 0.9 s) ~ 1,600 s of
one-thread work, about 13 minutes on two workers; less on an idle machine.
Departure: the paper's process supervision uses a learned PRM on MATH; the exact step labels of
the toy stand in for it in the process arm (and the learned PRM in its own arm).
"""

from __future__ import annotations

import functools

import pandas as pd

from labkit.algos.grpo import GRPOTrainer
from labkit.algos.process import ProcessGRPOTrainer
from labkit.algos.verifier import verifier_reward
from labkit.experiments import search
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, Outcome, resume_or_start
from labkit.models.policy import load_policy
from labkit.rewards.process import step_correctness
from labkit.rewards.reasoning import answer_match
from labkit.runs.evaluate import probe
from labkit.tasks import get_task

CLAIM = (
    "Process supervision beats outcome supervision. Lightman et al. 2023 (arXiv 2305.20050): a "
    "PRM trained on step labels ranks solutions better than an ORM. DeepSeekMath (Shao et al. "
    "2024, arXiv 2402.03300, sec. 4.1.3 and fig. 5): GRPO with process supervision climbs faster "
    "and higher than with outcome supervision. Seeds 000/001: ORM rewards the answer only, PRM "
    "every step. On the toy: does GRPO with step rewards learn faster or reach a higher held-out "
    "accuracy than with the answer alone, and is a learned ORM or PRM over-optimised?"
)
MODEL = "tiny-think"
RL = {
    "prompts_per_step": 16,
    "num_generations": 4,
    "max_completion_length": search.MAX_LEN,
    "learning_rate": 2e-4,
    "beta": 0.0,
    "diagnostics": 0,
}
"""Every arm's settings (and ``ppo_critic``'s): 16 prompts x 4, 64 tokens, lr 2e-4, no KL."""
ARMS = {
    "GRPO, outcome": {"algo": "grpo"},
    "GRPO, process": {"algo": "process"},
    "GRPO, learned ORM": {"algo": "grpo", "learned": "orm"},
    "GRPO process, learned PRM": {"algo": "process", "learned": "prm"},
}
HELDOUT = {"full": 300, "fast": 16}
"""Held-out prompts probed after RL: one sample each at T = 1 (s.e. <= 0.029 at 300)."""
PROBE_SEED = 1000
"""The cold start's probe seed: one step-0 point for every run."""
VERIFIER = {"full": (250, 4, 50), "fast": (32, 2, 10)}
"""A learned verifier's data and training: (train prompts, samples each, steps); lab 96's
250 prompts; 50 steps of 64 is about three passes over the 1,000 samples."""
TAIL = 0.25
"""The share of the steps the batch numbers are averaged over, at the start and at the end."""
LEARNED = {"orm": "last", "prm": "min"}
"""How a learned verifier's step probabilities make the reward (``solution_score``)."""
PILOT = {"seed": 100, "steps": 3, "grpo s/step": 2.0, "heldout 300 s": 4.0, "verifier s": 52.0}
"""The timing pilot (module docstring)."""


def heldout(model, tokenizer, examples, seed: int = 0) -> dict:
    """Held-out sampled (T = 1) accuracy, think rate, right-step share of the thoughts and the
    share cut off at ``search.MAX_LEN`` tokens (no scratchpad completion needs as many:
    the longest is 52 characters + eos) (:func:`~labkit.runs.evaluate.probe`)."""
    p = probe(
        model,
        tokenizer,
        search.scratchpad(),
        examples=examples,
        max_completion_length=search.MAX_LEN,
        seed=seed,
    )
    texts, prompts = p.completions, [e.prompt for e in examples]
    acc = answer_match(texts, answer=[e.answer for e in examples])
    steps = [s for s in step_correctness(texts, prompts) if s is not None]
    return {
        "accuracy": sum(acc) / len(acc),
        "think rate": len(steps) / len(texts),
        "step correctness": sum(steps) / len(steps) if steps else float("nan"),
        "truncated": sum(n >= search.MAX_LEN for n in p.lengths) / len(texts),
    }


@functools.cache
def cold_start(n: int) -> dict:
    """The cold start's :func:`heldout` on the first ``n`` held-out prompts (``PROBE_SEED``),
    once a process."""
    examples = get_task("scratchpad").heldout[:n]
    return heldout(*load_policy(MODEL), examples, PROBE_SEED)


def trainer_class(settings: dict, verifier=None):
    """The trainer class of a GRPO arm. A learned PRM is bound to a subclass, so a run resumed
    from its checkpoint gets it again (``resume_or_start`` passes only the reward functions
    and the task)."""
    algo = settings["algo"]
    if algo == "grpo":
        return GRPOTrainer
    if algo == "process":
        if verifier is None:
            return ProcessGRPOTrainer

        def init(self, *args, **kwargs):
            ProcessGRPOTrainer.__init__(self, *args, prm=verifier, **kwargs)

        return type("LearnedPRMGRPOTrainer", (ProcessGRPOTrainer,), {"__init__": init})
    raise ValueError(f"algo={algo!r}: use 'grpo' or 'process'")


def fit_verifier(kind: str, seed: int, fast: bool):
    """A learned ORM or PRM fitted on the cold start's own samples (sizes: ``VERIFIER``)."""
    prompts, per_prompt, steps = VERIFIER["fast" if fast else "full"]
    model, tok = load_policy(MODEL)
    v = search.fit_verifiers(
        model, tok, search.scratchpad(), prompts, per_prompt, steps, seed=seed, kinds=(kind,)
    )
    return v[kind]


def finish(trainer, n: int, seed: int) -> Outcome:
    """A trained run's outcome: held-out after RL, the cold start as step 0 of the curves,
    the summary of :func:`summary`."""
    examples = get_task("scratchpad").heldout[:n]
    after = heldout(trainer.model, trainer.tokenizer, examples, seed)
    m = trainer.log.metrics
    trainer.log.close()  # the run is done: its folder is free for a later resume
    held = pd.DataFrame([{"step": 0, **cold_start(n)}, {"step": int(m["step"].max()), **after}])
    held = held.rename(columns=lambda c: c if c == "step" else f"held-out {c}")
    curves = m.merge(held, on="step", how="outer").sort_values("step")
    return Outcome(summary(m, after), curves)


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed (its verifier fitted first when it learns from one), then
    :func:`finish`."""
    kind = settings.get("learned")
    v = fit_verifier(kind, seed, fast) if kind else None
    rewards, weights = [answer_match, step_correctness], [1.0, 0.0]  # both always logged
    if v is not None:
        rewards, weights = [verifier_reward(v, LEARNED[kind]), *rewards], [1.0, 0.0, 0.0]
    trainer = resume_or_start(
        trainer_class(settings, v),
        run_name,
        steps,
        tick,
        model=MODEL,
        reward_funcs=rewards,
        reward_weights=weights,
        task="scratchpad",
        seed=seed,
        max_steps=steps,
        track_kl=False,
        save_steps=max(1, steps // 3),
        **RL,
    )
    return finish(trainer, HELDOUT["fast" if fast else "full"], seed)


def summary(m: pd.DataFrame, after: dict) -> dict:
    """Held-out after RL (accuracy, think rate, right steps, truncated); the training batches'
    accuracy over the whole run and over its last ``TAIL``; for a learned reward, its score
    over the first and the last ``TAIL`` of the steps and the proxy gap (the score's rise
    minus the batch accuracy's)."""
    k = max(1, round(len(m) * TAIL))
    head, tail = m.iloc[:k], m.iloc[-k:]
    out = {f"held-out {c}": float(v) for c, v in after.items()}
    out["batch accuracy (mean over the run)"] = float(m["accuracy"].mean())
    out["batch accuracy (last quarter)"] = float(tail["accuracy"].mean())
    learned = [c for c in m.columns if c.startswith("rewards/learned_")]
    if learned:
        out["learned score (first quarter)"] = float(head[learned[0]].mean())
        out["learned score (last quarter)"] = float(tail[learned[0]].mean())
        rise = out["learned score (last quarter)"] - out["learned score (first quarter)"]
        out["proxy gap"] = rise - float(tail["accuracy"].mean() - head["accuracy"].mean())
    return out


LGO = "DeepSeekMath (Shao et al. 2024, 2402.03300) sec. 4.1.3, fig. 5; Lightman et al. 2023"
GAO = "Gao et al. 2022 (2210.10760) sec. 3"
EXPERIMENT = Experiment(
    name="prm",
    lab="95_orm_vs_prm",
    arms=ARMS,
    train=train,
    steps=25,
    fast_steps=2,
    curves=(
        "held-out accuracy",
        "held-out think rate",
        "held-out step correctness",
        "held-out truncated",
        "accuracy",
        "rewards/step_correctness/mean",
        "rewards/learned_orm/mean",
        "rewards/learned_prm/mean",
        "len/mean",
    ),
    claims=(
        Claim(
            "grpo-process",
            "GRPO with process supervision ends more accurate than with outcome supervision",
            LGO,
            metric="held-out accuracy",
            arm="GRPO, process",
            baseline="GRPO, outcome",
            note="held-out accuracy after RL, one sample at T = 1 on 300 prompts",
        ),
        Claim(
            "grpo-process-faster",
            "GRPO with process supervision learns faster than with outcome supervision",
            LGO,
            metric="batch accuracy (mean over the run)",
            arm="GRPO, process",
            baseline="GRPO, outcome",
            note="the training batches' accuracy averaged over every step: the area under "
            "the learning curve",
        ),
        Claim(
            "learned-orm",
            "RL against a learned ORM over-optimises it: its score rises more than the accuracy",
            GAO,
            metric="proxy gap",
            arm="GRPO, learned ORM",
            note="proxy gap: the learned score's rise minus the batch accuracy's, first vs last "
            "quarter of the steps",
        ),
        Claim(
            "learned-prm",
            "RL against a learned PRM over-optimises it: its score rises more than the accuracy",
            GAO,
            metric="proxy gap",
            arm="GRPO process, learned PRM",
            note="proxy gap: as for the ORM",
        ),
    ),
    live={"arms": ["GRPO, outcome", "GRPO, process"], "seeds": (0, 1), "steps": 25},
)
