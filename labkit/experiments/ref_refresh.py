"""A reference policy that moves (TR-DPO): what refreshing pi_ref does to KL and reward.

Gorbatovski et al. 2024 ("Learn Your Reference Model for Real Good Alignment", arXiv 2404.09656)
refresh pi_ref during training, softly (theta_ref <- alpha theta + (1 - alpha) theta_ref) or
hard (pi_ref := pi_theta every tau steps), and report that the Trust Region variants beat plain
DPO / IPO / KTO while drifting further from the initial policy (abstract; sec. 5). TRL has it as
``sync_ref_model``, ``ref_model_mixup_alpha``, ``ref_model_sync_steps`` (seed 003), on GRPO as
well as DPO; labkit's rule is :func:`labkit.models.reference.refresh_reference`.

Arms, all from the tiny policy on 2-digit addition, each refresh arm refreshing ``REFRESHES``
times a run (tau = steps / 5):
  GRPO      the labs' base run (``BASE_RUN``: ``digit_partial``, 32 prompts x G = 4, mu = 2,
            lr 5e-4) with a KL penalty, beta = 0.3 (k3 in the loss): fixed pi_ref; hard refresh
            (alpha 1); soft refresh (alpha 0.6, TRL's default), every tau steps.
  DPO       offline DPO on the initial policy's correct-vs-incorrect pairs (512 prompts x 8,
            the same pairs for every arm of a seed), beta 0.3, lr 3e-5 (the setting
            ``tests/test_algorithms_dpo.py`` shows training): fixed pi_ref (DPO); TR-DPO hard;
            TR-DPO soft (alpha 0.6).
Measured per run: KL to pi_ref and KL to pi_0 (k3 per token over the step's own samples, mean of
the last 10 % of steps: ``kl/k3`` and ``kl_init/k3``; with a fixed pi_ref they are the same
number), the training reward over the last 10 %, and at the end, on held-out prompts, one sample
each at temperature 1: the accuracy, and the k3 KL of the final policy to pi_0 on those samples
(the one KL measure the DPO arms have).

Settings chosen before any run of this experiment: beta = 0.3 is the largest of lab 78's sweep,
where the penalty held the policy measurably nearer pi_ref (a penalty that does not bind would
leave nothing for a refresh to free); five refreshes a run; alpha 0.6 is TRL's default. A 3-step
pilot on seed 100 measured only the time per step (its rewards were not looked at): see
``PILOT``. From it, ``steps`` = 300 (tau = 60): a seed's six arms take about
3 x 300 x 0.3 + 3 x 300 x 0.14 + 15 = 410 s, five seeds on two workers about 17 minutes
(``python scripts/run_experiment.py ref_refresh --workers 2``). Departure from the paper: the paper's setting is offline preference data on
2.8-12B models judged by GPT-4; here the quality measure is held-out accuracy, and on GRPO the
refresh is TRL's option rather than the paper's experiment.
"""

from __future__ import annotations

import torch

from labkit.algos.config import BASE_RUN
from labkit.algos.dpo import DPOTrainer
from labkit.core import kl_k3, masked_mean
from labkit.experiments.arms import grpo_run, heldout_accuracy, tail_means
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, Outcome, resume_or_start
from labkit.models.policy import load_policy
from labkit.models.rollout import completion_logprobs, rollout
from labkit.tasks.base import max_completion_tokens

CLAIM = (
    "TR-DPO (Gorbatovski et al. 2024, arXiv 2404.09656): updating the reference policy during "
    "training, softly (alpha) or hard (every tau steps), lets the policy go further from the "
    "initial one while keeping (or improving) its quality, and beats training against a fixed "
    "pi_ref. With a refreshed pi_ref the KL term is paid to a policy that follows pi_theta, so "
    "it stays small while the KL to pi_0 grows; a soft refresh lies between fixed and hard."
)
BETA = 0.3
"""The KL weight of every GRPO arm (k3 in the loss); DPO's beta too."""
REFRESHES = 5
"""Refreshes of pi_ref in a run: tau = steps // REFRESHES (at least 1)."""
GRPO = {k: v for k, v in BASE_RUN.items() if k != "max_steps"} | {"beta": BETA}
DPO = {"beta": BETA, "learning_rate": 3e-5, "pair_prompts": 512, "num_generations": 8}
FIXED, HARD, SOFT = "GRPO, fixed pi_ref", "GRPO, hard refresh", "GRPO, soft refresh (0.6)"
DPO_FIXED, DPO_HARD, DPO_SOFT = "DPO", "TR-DPO hard", "TR-DPO soft (0.6)"
ARMS = {
    FIXED: {"algo": "grpo"},
    HARD: {"algo": "grpo", "ref_model_mixup_alpha": 1.0},
    SOFT: {"algo": "grpo", "ref_model_mixup_alpha": 0.6},
    DPO_FIXED: {"algo": "dpo"},
    DPO_HARD: {"algo": "dpo", "ref_model_mixup_alpha": 1.0},
    DPO_SOFT: {"algo": "dpo", "ref_model_mixup_alpha": 0.6},
}
"""Arm -> its algorithm and, for a refresh arm, alpha (``sync_ref_model`` on, tau from steps)."""
HELDOUT = {"full": 300, "fast": 16}
"""Held-out prompts per run: one sample each at temperature 1 (s.e. <= 0.029 at 300)."""
PILOT = {"seed": 100, "steps": 3, "grpo s/step": 0.3, "dpo s/step": 0.14, "per run s": 2.5}
"""The timing pilot: seconds per step at one thread (GRPO 0.25-0.34 with a refresh and the
second forward for KL to pi_0 every step, DPO 0.11-0.16) and the fixed cost of a run (DPO's
pairs, the held-out probes), measured with the machine's 2 cores otherwise loaded (load ~3)."""
KL0, KLREF = "KL to pi_0 (last 10%)", "KL to pi_ref (last 10%)"
REWARD, ACC, KL0_HELDOUT = "reward/mean (last 10%)", "held-out accuracy", "KL to pi_0 (held-out)"


def refresh_settings(settings: dict, steps: int) -> dict:
    """An arm's config fields: ``sync_ref_model`` with its alpha and tau = steps // REFRESHES
    when the arm refreshes, nothing otherwise.

    >>> refresh_settings({"algo": "grpo", "ref_model_mixup_alpha": 1.0}, 100)
    {'sync_ref_model': True, 'ref_model_mixup_alpha': 1.0, 'ref_model_sync_steps': 20}
    >>> refresh_settings({"algo": "dpo"}, 100)
    {}
    """
    if "ref_model_mixup_alpha" not in settings:
        return {}
    return {
        "sync_ref_model": True,
        "ref_model_mixup_alpha": settings["ref_model_mixup_alpha"],
        "ref_model_sync_steps": max(1, steps // REFRESHES),
    }


@torch.no_grad()
def heldout_kl_to_start(trainer, n: int, seed: int) -> float:
    """k3 KL(pi_theta || pi_0) per token on one sample (temperature 1) of the policy on each of
    the first ``n`` held-out prompts; pi_0 is the shipped tiny policy the runs start from."""
    start, _ = load_policy("tiny")
    start.to(trainer.device)
    prompts = [e.prompt for e in trainer.task.heldout[:n]]
    gen = torch.Generator(trainer.device).manual_seed(seed + 1)
    length = max_completion_tokens(trainer.task)
    r = rollout(trainer.model, trainer.tokenizer, prompts, length, generator=gen)
    logp = completion_logprobs(trainer.model, r)  # [B, T]
    start_logp = completion_logprobs(start, r)  # [B, T]
    return float(masked_mean(kl_k3(logp, start_logp), r.completion_mask.float()))


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed: GRPO (``GRPO``) or DPO (``DPO``) with the arm's refresh, resumable;
    its KL and reward columns, held-out accuracy and KL to pi_0."""
    refresh = refresh_settings(settings, steps)
    common = {"seed": seed, "save_steps": max(1, steps // 3), **refresh}
    if settings["algo"] == "dpo":
        trainer = resume_or_start(
            DPOTrainer, run_name, steps, tick, model="tiny", max_steps=steps, **DPO, **common
        )
    else:
        trainer = grpo_run("tiny", {}, steps=steps, run_name=run_name, tick=tick, **GRPO, **common)
    m = trainer.log.metrics
    n = HELDOUT["fast" if fast else "full"]
    summary = {ACC: heldout_accuracy(trainer, n, max_completion_tokens(trainer.task), seed=seed)}
    summary[KL0_HELDOUT] = heldout_kl_to_start(trainer, n, seed)
    if settings["algo"] == "grpo":
        if "kl_init/k3" not in m:  # a fixed pi_ref is pi_0: the two KLs are one
            m = m.assign(**{"kl_init/k3": m["kl/k3"]})
        tail = tail_means(m, ("kl_init/k3", "kl/k3", "reward/mean"))
        summary |= {KL0: tail["kl_init/k3 (last 10%)"], KLREF: tail["kl/k3 (last 10%)"]}
        summary[REWARD] = tail["reward/mean (last 10%)"]
    trainer.log.close()
    return Outcome(summary, m)


PAPER = "TR-DPO (Gorbatovski et al. 2024, 2404.09656)"
RULE = "the refresh rule (seed 003; TRL's SyncRefModelCallback)"
GRPO_NOTE = "the paper tests DPO, IPO and KTO; on GRPO the refresh is TRL's option"
CLAIMS = (
    Claim(
        "grpo-drift",
        "with a hard-refreshed pi_ref, GRPO ends further from the initial policy",
        f"{PAPER} abstract, sec. 5 (KL to the initial policy)",
        metric=KL0,
        arm=HARD,
        baseline=FIXED,
        note=GRPO_NOTE,
    ),
    Claim(
        "grpo-penalty",
        "... while the KL it pays (to the current pi_ref) is smaller",
        f"{RULE}; {PAPER} sec. 3",
        metric=KLREF,
        arm=HARD,
        baseline=FIXED,
        direction=-1,
        note="pi_ref follows pi_theta, so this is the rule's consequence rather than a finding",
    ),
    Claim(
        "grpo-reward",
        "at equal beta, GRPO with a hard-refreshed pi_ref earns more reward",
        f"{PAPER} sec. 5",
        metric=REWARD,
        arm=HARD,
        baseline=FIXED,
        note=GRPO_NOTE,
    ),
    Claim(
        "grpo-accuracy",
        "at equal beta, GRPO with a hard-refreshed pi_ref ends more accurate",
        f"{PAPER} sec. 5",
        metric=ACC,
        arm=HARD,
        baseline=FIXED,
        note=GRPO_NOTE,
    ),
    Claim(
        "soft-drift-fixed",
        "a soft refresh (alpha 0.6) also ends further from pi_0 than a fixed pi_ref",
        f"{RULE}; {PAPER} sec. 3",
        metric=KL0,
        arm=SOFT,
        baseline=FIXED,
    ),
    Claim(
        "soft-drift-hard",
        "... but less far than a hard refresh at the same tau (soft lies between)",
        f"{RULE}; {PAPER} sec. 3",
        metric=KL0,
        arm=SOFT,
        baseline=HARD,
        direction=-1,
        note="alpha < 1 leaves pi_ref part of the way behind pi_theta at every refresh",
    ),
    Claim(
        "tr-dpo-soft",
        "TR-DPO (soft, alpha 0.6) ends more accurate than DPO",
        f"{PAPER} sec. 5, tables 1-2",
        metric=ACC,
        arm=DPO_SOFT,
        baseline=DPO_FIXED,
        note="the paper's quality is GPT-4-judged win rate on HH and TL;DR; here held-out accuracy",
    ),
    Claim(
        "tr-dpo-hard",
        "TR-DPO (hard) ends more accurate than DPO",
        f"{PAPER} sec. 5, tables 1-2",
        metric=ACC,
        arm=DPO_HARD,
        baseline=DPO_FIXED,
        note="the paper's quality is GPT-4-judged win rate on HH and TL;DR; here held-out accuracy",
    ),
    Claim(
        "tr-dpo-drift",
        "TR-DPO (soft) goes further from the initial policy than DPO",
        f"{PAPER} abstract, sec. 5",
        metric=KL0_HELDOUT,
        arm=DPO_SOFT,
        baseline=DPO_FIXED,
    ),
)

EXPERIMENT = Experiment(
    name="ref_refresh",
    lab="35_reference_refresh",
    arms=ARMS,
    train=train,
    steps=300,
    fast_steps=5,
    claims=CLAIMS,
    curves=(
        "reward/mean",
        "accuracy",
        "kl/k3",
        "kl_init/k3",
        "ref/refreshes",
        "loss",
        "rewards/margins",
        "rewards/accuracies",
    ),
    live={"arms": [FIXED, HARD], "seeds": (0, 1), "steps": 60},
)
