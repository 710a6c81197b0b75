"""REINFORCE, a baseline, RLOO, GRPO, Dr. GRPO and PPO: the variance of their policy gradient at
the cold start, and training on the same budget.

Each estimator is an arm of :data:`EXPERIMENT`; on each seed it
(a) measures its gradient's relative variance at the cold-started policy on K batches of the
same prompts x G completions (:mod:`labkit.experiments.gradient_variance`: the Gram-matrix
statistics), with the rewards as they are and moved by -1, and how far its expected gradient
lies from REINFORCE's (no baseline) on the same batches; the batches depend on the seed only,
so every arm sees the same completions and the claims are paired differences;
(b) trains the labs' base run (``BASE_RUN``: clipped token-mean loss, mu = 2) with only the
advantage changed for :data:`STEPS` steps, and samples the held-out prompts once each at
temperature 1.

Departures, and why: :data:`STEPS` is a third of the base run's 600 (six arms x five seeds of
600 steps take about an hour and a half on two cores); the estimators differ most while the
policy is still learning, before every arm nears its ceiling. Set before the stored run. PPO gets ppo_epochs = mu on one minibatch, so every method makes the same
updates on the same number of samples; its critic is a linear head on the policy's trunk (TRL's
``ValueHead``), not a second model of the policy's size.
"""

from __future__ import annotations

import pandas as pd
import torch

from labkit.algos.config import BASE_RUN as BASE
from labkit.experiments.arms import grpo_run, heldout_accuracy, tail_means
from labkit.experiments.claims import Claim
from labkit.experiments.gradient_variance import (
    ESTIMATORS,
    estimator_config,
    fixed_batches,
    gram_stats,
    make_trainer,
    policy_gradients,
    probe_config,
    score_norms,
    shifted,
    state_mib,
    trainer_class,
    variance_table,
)
from labkit.experiments.harness import Experiment, Outcome
from labkit.models.policy import load_policy

CLAIM = (
    "A baseline leaves the policy gradient unbiased and lowers its variance (Williams 1992; "
    "Sutton & Barto 2018, ch. 13.4). RLOO (Ahmadian et al. 2024, 'Back to Basics: Revisiting "
    "REINFORCE Style Optimization for Learning from Human Feedback in LLMs', arXiv 2402.14740) "
    "takes the mean reward of the prompt's other G-1 samples as the baseline and beats vanilla "
    "REINFORCE and PPO; GRPO (DeepSeekMath, arXiv 2402.03300) uses the group mean and std and so "
    "drops PPO's critic, a second model of the policy's size. Seeds 001, 002, 004: variance "
    "REINFORCE > REINFORCE with a baseline > RLOO/GRPO, and GRPO = PPO - value model."
)
ARMS = {label: {"estimator": key} for key, (label, _) in ESTIMATORS.items()}
REFERENCE = "reinforce"
"""The estimator without a baseline: the others' expected gradients are compared with its."""
VARIANCE = {"full": (64, 32), "fast": (8, 16)}
"""(K batches, prompts) of G = 4 completions for the variance at the cold start."""
STEPS = 200
"""Training steps of each arm (the base run's budget is 600)."""
HELDOUT = {"full": 400, "fast": 32}
"""Held-out prompts per run: one sample each at temperature 1 (s.e. <= 0.025 at 400)."""
SHIFT = -1.0
"""Every reward moved by this: the textbook's premise (rewards far from 0) made true."""
DIST = "|E g - E g_REINFORCE|^2 / |E g_REINFORCE|^2"


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One estimator on one seed: its gradient noise at the cold start (:func:`gradient_noise`),
    then the base run with its advantage, summarised by :func:`training_summary`."""
    key = settings["estimator"]
    K, prompts = VARIANCE["fast" if fast else "full"]
    noise = gradient_noise(key, seed, K=K, prompts=prompts)
    base = {k: v for k, v in BASE.items() if k != "max_steps"}
    trainer = grpo_run(
        "tiny",
        estimator_config(key, base),
        seed=seed,
        steps=steps,
        run_name=run_name,
        tick=tick,
        trainer_cls=trainer_class(key),
    )
    summary = noise | training_summary(trainer, HELDOUT["fast" if fast else "full"], seed)
    return Outcome(summary, trainer.log.metrics)


def gradient_noise(key: str, seed: int, K: int, prompts: int) -> dict:
    """Estimator ``key`` at the cold-started policy on the seed's K batches: relative variance
    (with its jackknife SE) as the rewards are and moved by :data:`SHIFT`, its expected
    gradient against REINFORCE's (cosine, length ratio, squared distance), and the
    variance-optimal constant baseline b* beside the mean reward."""
    model, tokenizer = load_policy("tiny")
    cfg = probe_config(prompts)
    est, ref = (make_trainer(k, model, tokenizer, **cfg) for k in (key, REFERENCE))
    batches = fixed_batches(ref, prompts, K, seed)  # the seed's batches, whatever the arm
    N = sum(p.numel() for p in model.parameters() if p.requires_grad)
    grads = torch.empty(3, K, N)  # [3, K, N]: estimator, REINFORCE, estimator on r + SHIFT
    for k, r in enumerate(batches):
        grads[:, k] = policy_gradients([(est, r), (ref, r), (est, shifted(r, SHIFT))])
    row = variance_table(grads[:2], [key, REFERENCE], ref=REFERENCE).iloc[0]
    moved = gram_stats(grads[2] @ grads[2].T)  # [K, K]
    norms = score_norms(model, tokenizer, seed=seed)
    return {
        "rel. var": row["rel_var"],
        "rel. var se": row["rel_var se"],
        "rel. var, reward r - 1": moved["rel_var"],
        "loo cos": row["loo_cos"],
        "cos(E g, E g_REINFORCE)": row[f"cos(E g, E g_{REFERENCE})"],
        "|E g| / |E g_REINFORCE|": row[f"|E g| / |E g_{REFERENCE}|"],
        DIST: row[f"|E g - E g_{REFERENCE}|^2 / |E g_{REFERENCE}|^2"],
        "b*": norms["b_star"],
        "mean reward": norms["mean_reward"],
    }


def steps_to(m: pd.DataFrame, level: float, window: int = 20) -> float:
    """Steps until the moving mean of reward/mean reaches ``level`` (NaN if never).

    >>> steps_to(pd.DataFrame({"reward/mean": [0.2, 0.9, 0.9]}), 0.5, window=2)
    2.0
    """
    hit = (m["reward/mean"].rolling(window, min_periods=1).mean() >= level).to_numpy()
    return float(hit.argmax() + 1) if hit.any() else float("nan")


def training_summary(trainer, n_eval: int, seed: int) -> dict:
    """Held-out accuracy, the last 10 % of steps' reward, steps to a reward of 0.8, and what
    training holds in memory (:func:`~labkit.experiments.gradient_variance.state_mib`)."""
    m, head = trainer.log.metrics, getattr(trainer, "value_head", None)
    return {
        "held-out accuracy": heldout_accuracy(trainer, n_eval, seed=seed),
        **tail_means(m, ["reward/mean"]),
        "steps to reward 0.8": steps_to(m, 0.8),
        "state MiB": state_mib(trainer),
        "value-head params": 0 if head is None else sum(p.numel() for p in head.parameters()),
    }


LABEL = {key: label for key, (label, _) in ESTIMATORS.items()}
TEXTBOOK = "Williams 1992; Sutton & Barto 2018, sec. 13.4"
RLOO = "Ahmadian et al. 2024 (2402.14740)"
PREMISE = (
    "a constant baseline b lowers the variance only for 0 < b < 2 b* (Greensmith et al. 2004); "
    "the summary's b* beside the mean reward says whether the toy's [0, 1] reward meets that"
)


def _claim(key, text, source, metric, arm, baseline=None, direction=-1, **kw) -> Claim:
    base = None if baseline is None else LABEL[baseline]
    return Claim(
        key, text, source, metric=metric, arm=LABEL[arm], baseline=base, direction=direction, **kw
    )


CLAIMS = (
    _claim(
        "unbiased-rloo",
        "a baseline leaves the policy gradient unbiased: RLOO's expected gradient is REINFORCE's",
        TEXTBOOK,
        DIST,
        "rloo",
        direction=0,
        margin=0.01,
        note="0.01: the two expected gradients differ by less than a tenth of its length",
    ),
    _claim(
        "unbiased-mean",
        "a baseline leaves the policy gradient unbiased: the batch-mean baseline's expected "
        "gradient is REINFORCE's",
        TEXTBOOK,
        DIST,
        "reinforce_mean",
        direction=0,
        margin=0.01,
        note="the batch mean includes the sample itself: E g shrinks by 1/B (B = 128): 6e-5 here",
    ),
    _claim(
        "mean-lowers-var",
        "a baseline lowers the variance: the batch-mean baseline against none",
        TEXTBOOK,
        "rel. var",
        "reinforce_mean",
        "reinforce",
        note=PREMISE,
    ),
    _claim(
        "rloo-lowers-var",
        "a baseline lowers the variance: RLOO against none",
        f"{TEXTBOOK}; {RLOO}",
        "rel. var",
        "rloo",
        "reinforce",
        note=PREMISE,
    ),
    _claim(
        "rloo-below-mean",
        "RLOO's leave-one-out baseline is quieter than the batch-mean baseline",
        f"{RLOO}; course seeds 001, 002, 004",
        "rel. var",
        "rloo",
        "reinforce_mean",
    ),
    _claim(
        "rloo-lowers-var-shifted",
        "a baseline lowers the variance when the rewards sit far from 0 (every reward - 1)",
        TEXTBOOK,
        "rel. var, reward r - 1",
        "rloo",
        "reinforce",
    ),
    _claim(
        "rloo-beats-reinforce",
        "RLOO trains better than REINFORCE on the same budget",
        RLOO,
        "held-out accuracy",
        "rloo",
        "reinforce",
        direction=1,
    ),
    _claim(
        "rloo-beats-ppo",
        "RLOO trains better than PPO on the same budget",
        RLOO,
        "held-out accuracy",
        "rloo",
        "ppo",
        direction=1,
    ),
    _claim(
        "grpo-matches-ppo",
        "GRPO matches PPO without a critic",
        "DeepSeekMath (Shao et al. 2024, 2402.03300) sec. 4.1",
        "held-out accuracy",
        "grpo",
        "ppo",
        direction=0,
        margin=0.03,
    ),
    _claim(
        "critic-memory",
        "PPO's critic, a model of the policy's size, costs memory GRPO does not spend",
        "DeepSeekMath (Shao et al. 2024, 2402.03300) sec. 4.1",
        "state MiB",
        "ppo",
        "grpo",
        direction=1,
        effect=13.4,
        note=(
            "13.4 MiB: a critic of the tiny policy's size (878,464 parameters) with its "
            "gradients and AdamW moments, 16 bytes a parameter; labkit's critic is a linear "
            "head on the policy's trunk, so the toy cannot show the paper's cost"
        ),
    ),
)
EXPERIMENT = Experiment(
    name="pg_variance",
    lab="74_pg_estimators",
    arms=ARMS,
    train=train,
    steps=STEPS,
    curves=("reward/mean", "accuracy"),
    claims=CLAIMS,
    live={"arms": [LABEL["reinforce"], LABEL["rloo"]], "seeds": (0, 1), "steps": 40},
)
