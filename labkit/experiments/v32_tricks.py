"""DeepSeek-V3.2's two off-policy tricks on the toy, under mu > 1 (lab 81's stress section;
:mod:`labkit.experiments.v32_tricks_base` runs the same arms and claims at the labs' base GRPO
run, where plain GRPO trains, and opens the lab).

DeepSeek-V3.2 (DeepSeek-AI 2025, arXiv 2512.02556, sec. 3.1) stabilises GRPO with:
1. Off-policy sequence masking: the policy term of a sequence i is multiplied by
       M_i = 0 if A_i < 0 and (1/|o_i|) sum_t log(pi_old(o_t) / pi_theta(o_t)) > delta, else 1
   (``GRPOConfig.off_policy_mask`` = delta; ``labkit.core.off_policy_sequence_mask``).
2. Keep sampling mask: sampling with top-p/top-k truncates pi_old's support; the truncation
   mask is kept and applied to pi_theta when training, so both distributions share one action
   space (``GRPOConfig.truncated_logprobs=True`` with ``top_p``; the mask is
   ``Rollout.sampling_mask`` and ``completion_logprobs`` renormalises log pi over it, for
   pi_old, pi_theta and pi_ref alike).

Both are compared on the same seeds and budget as lab 80's stress (mu = 4, lr 1e-3 constant,
32 prompts x 4, ``loss_type="grpo"``, beta = 0), each claim a paired difference over the seeds
(``EXPERIMENT``); a fifth arm, ``PROBE``, measures :func:`sampling_mismatch` on each seed's first
batch. The stress makes every arm's reward fall: the arms are compared partly on how they crash
(the claims' notes; the setting where the baseline trains is ``v32_tricks_base``). Departures: labkit samples with the trained
model, so pi_old is recomputed by the trainer (the report's pi_old is the inference engine's
probability, which also carries train/inference mismatch); without the keep mask, labkit's
pi_old is untruncated, so the ratio pi_theta / pi_old is consistent but both differ from the
truncated sampler mu: :func:`sampling_mismatch` measures that gap.
"""

from __future__ import annotations

import pandas as pd
import torch

from labkit.algos.grpo import GRPOTrainer
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, Outcome
from labkit.experiments.off_policy import CRASH, STRESS, setting_run, stability
from labkit.models.rollout import completion_logprobs

CLAIM = (
    "DeepSeek-V3.2 (DeepSeek-AI 2025, arXiv 2512.02556, sec. 3.1): masking the negative-advantage "
    "sequences whose policy has drifted from the sampling policy by more than delta, "
    "(1/|o_i|) sum_t log(pi_old / pi_theta) > delta, improves training stability; keeping the "
    "top-p/top-k truncation mask of sampling and applying it to pi_theta at training keeps the "
    "two policies on one action space, which the report finds preserves language consistency."
)
DELTA = 0.25
"""delta of the masking runs: just above -log(1 - eps) = 0.223 (eps 0.2), so a masked sequence's
geometric-mean ratio is below PPO-clip's lower bound."""
TOP_P = 0.9

PLAIN, MASKED = "grpo", f"grpo + seq mask (delta {DELTA:g})"
TOP, KEPT = f"top_p {TOP_P:g}", f"top_p {TOP_P:g} + keep mask"
PROBE = "probe: top-p sampling mismatch"
ARMS = {
    PLAIN: {},
    MASKED: {"off_policy_mask": DELTA},
    TOP: {"top_p": TOP_P},
    KEPT: {"top_p": TOP_P, "truncated_logprobs": True},
    PROBE: {"top_p": TOP_P},
}
"""name -> GRPOConfig overrides: the masking pair, the keep-sampling-mask pair, and the probe."""


def extra(metrics: pd.DataFrame) -> dict:
    """What the stress table lacks: the masked fraction and the entropy at the end."""
    q = max(1, len(metrics) // 4)
    frac = metrics["mask/off_policy_frac"].mean() if "mask/off_policy_frac" in metrics else 0.0
    return {"masked frac": frac, "entropy (last 1/4)": metrics["entropy"].iloc[-q:].mean()}


@torch.no_grad()
def sampling_mismatch(seed: int = 0, top_p: float = TOP_P) -> dict:
    """How far the untruncated pi that training sees without the keep mask is from the truncated
    sampler mu, on one batch of the tiny policy at its cold start: per sampled token
    log mu(o_t) - log pi(o_t) = -log(mass top-p kept) >= 0, and the share of tokens whose step
    truncated anything. With the keep mask the training log-prob is log mu itself."""
    tr = GRPOTrainer(
        "tiny",
        task="addition",
        seed=seed,
        max_steps=1,
        top_p=top_p,
        truncated_logprobs=True,
        **{k: STRESS[k] for k in ("num_generations", "prompts_per_step")},
    )
    r = tr.collect()
    log_mu = completion_logprobs(tr.model, r)  # [B, T] renormalised over the kept tokens
    kept, r.sampling_mask = r.sampling_mask, None
    log_pi = completion_logprobs(tr.model, r)  # [B, T] untruncated
    m = r.completion_mask.bool()  # [B, T]
    gap = (log_mu - log_pi)[m]  # [N]
    cut = (~kept).any(-1)[m]  # [N] the step's top-p dropped at least one token
    return {
        "tokens": int(m.sum()),
        "truncated steps frac": float(cut.float().mean()),
        "log mu - log pi mean": float(gap.mean()),
        "log mu - log pi max": float(gap.max()),
    }


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed under ``STRESS``: :func:`train_at`."""
    return train_at(
        STRESS, arm, settings, seed=seed, steps=steps, fast=fast, run_name=run_name, tick=tick
    )


def train_at(setting: dict, arm: str, settings: dict, *, seed, steps, fast, run_name, tick):
    """One arm on one seed: GRPO at ``setting`` with the arm's trick, summarised by
    ``off_policy.stability`` and :func:`extra`; or the probe, :func:`sampling_mismatch` (at the
    cold start: the setting does not enter it)."""
    if arm == PROBE:
        out = sampling_mismatch(seed=seed, top_p=settings["top_p"])
        tick(steps, steps)
        return Outcome(out, pd.DataFrame({"step": pd.Series(dtype="int64")}))
    trainer = setting_run(
        setting, settings, seed=seed, steps=steps, run_name=run_name, tick=tick, loss_type="grpo"
    )
    m = trainer.log.metrics
    return Outcome({**stability(m), **extra(m)}, m)


SOURCE = "DeepSeek-V3.2 (2512.02556) sec. 3.1"


def _trick(key, text, *, arm, baseline, metric, direction, note=CRASH) -> Claim:
    """A claim that ``arm`` (a trick) beats ``baseline`` (without it) on ``metric``."""
    return Claim(
        key, text, SOURCE, metric=metric, arm=arm, baseline=baseline, direction=direction, note=note
    )


def claims(tag: str = "", crash: str = CRASH) -> tuple[Claim, ...]:
    """The claims and their rules, the same at every setting: ``tag`` is added to each claim's
    text (the stress experiment's have none), ``crash`` opens each claim's note."""
    return (
        _trick(
            "mask-reward",
            f"off-policy sequence masking stabilises training under mu > 1: higher final reward{tag}",
            arm=MASKED,
            baseline=PLAIN,
            metric="reward (last 1/4)",
            direction=1,
            note=crash,
        ),
        _trick(
            "mask-drawdown",
            f"off-policy sequence masking stabilises training under mu > 1: smaller drawdown{tag}",
            arm=MASKED,
            baseline=PLAIN,
            metric="drawdown",
            direction=-1,
            note=crash,
        ),
        _trick(
            "keep-reward",
            f"keeping the top-p sampling mask at training helps: higher final reward{tag}",
            arm=KEPT,
            baseline=TOP,
            metric="reward (last 1/4)",
            direction=1,
            note=f"{crash}; the report's benefit, language consistency, has no counterpart here",
        ),
        _trick(
            "keep-drawdown",
            f"keeping the top-p sampling mask at training helps: smaller drawdown{tag}",
            arm=KEPT,
            baseline=TOP,
            metric="drawdown",
            direction=-1,
            note=f"{crash}; the report's benefit, language consistency, has no counterpart here",
        ),
        _trick(
            "keep-kl-old",
            f"keeping the top-p sampling mask keeps pi_theta closer to pi_old (one action space){tag}",
            arm=KEPT,
            baseline=TOP,
            metric="kl/old",
            direction=-1,
            note=f"{crash}; the mismatch the report removes, read as approx KL to pi_old",
        ),
    )


EXPERIMENT = Experiment(
    name="v32_tricks",
    lab="81_v32_off_policy_tricks",
    arms=ARMS,
    train=train,
    steps=60,
    fast_steps=4,
    curves=("reward/mean", "mask/off_policy_frac", "kl/old", "entropy", "ratio/max"),
    claims=claims(),
    live={"arms": [PLAIN, MASKED, TOP, KEPT], "seeds": (0, 1), "steps": 60},
)
