"""The token-level objective as a first-order approximation of the sequence-level one: how far
apart are their gradients, on the same batches, as the policy drifts from the sampler? (lab 82)

Seed 002's argument for GSPO, CISPO, off-policy masking and truncated IS (from Zheng et al.
2025, "Stabilizing Reinforcement Learning with LLMs", arXiv 2512.01374, secs. 2.3-2.4): with rho_t =
pi_theta(y_t) / mu_old(y_t) = 1 + delta_t, prod_t rho_t ~ 1 + sum_t delta_t, so

    grad J^seq = grad 1/B sum_i A_i prod_t rho_{i,t}  ~  grad J^token = grad 1/B sum_i A_i sum_t rho_{i,t}

holds while pi_theta ~ mu_old, the policy that sampled (``labkit.core.first_order``), and the
two part as pi_theta drifts from it, through staleness (mu inner updates on one batch, the
learning rate of each) or a sampler that computes differently (precision).

What one run measures: GRPO (the existing trainer and its own clipped loss, ``SETUP``) trains
``tiny-babble`` on ``addition_ramble`` (completions of up to 16 tokens, so a sequence's ratio
multiplies up to 16 token ratios). At every inner update, before the optimizer step and on the
batch being trained, :class:`AgreementTrainer` computes the gradients of -J^token and -J^seq
with mu_old = the sampler's own log-probs, their cosine, the relative error
|g_token - g_seq| / |g_seq| and the drift, the k3 mean of KL(mu_old || pi_theta) over the
batch's tokens. ``curves`` hold one row per inner update; :func:`summary` reduces a run.

Arms (``ARMS``): staleness mu = 1, 2, 4, 8 at lr 1e-3 (the trainer's default); the learning rate
at mu = 4 (1e-4 against 1e-3); precision at mu = 1: a sampler under bf16 autocast (cached
decoding, as a low-precision inference engine) feeding the fp32 trainer
(:class:`BF16SamplerTrainer`), against the fp32 sampler (bf16 autocast on this CPU is slow
for training, not for sampling 16 tokens: the arm costs about what the fp32 one does).
``steps`` = 10 per run, 5 seeds: sized before the run by a 3-step pilot of each arm on seed 100
(timing only; ~12 s per step over the six arms on one thread, ~0.5 s per inner update), so the
stored run takes about 10 minutes on one worker.

Departures, and why: the surrogates are unclipped (the argument is about the objective, not the
clip); the seed's token sum, not GRPO's per-sequence mean (``labkit.core.first_order``); the
learning rate is constant (the drift per step does not shrink with a schedule); the two
gradients cost two extra backward passes per inner update; runs keep no checkpoints (the rows
live in the trainer), so a killed run is redone, not resumed.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from labkit.algos.grpo import GRPOTrainer
from labkit.core.first_order import gradient_agreement, sequence_surrogate, token_surrogate
from labkit.core.trust_region import flat_grad
from labkit.experiments.arms import grpo_run
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, Outcome
from labkit.models.device import autocast

CLAIM = (
    "The token-level surrogate is a first-order approximation of the sequence-level one "
    "(seed 002; Zheng et al. 2025, 'Stabilizing Reinforcement Learning with LLMs: Formulation "
    "and Practices', arXiv 2512.01374, secs. 2.3-2.4, the argument the seed's slide follows; "
    "the motivation of GSPO, arXiv 2507.18071): their gradients agree when "
    "pi_theta = mu_old and part as the policy drifts from the sampler, through staleness "
    "(inner updates mu, learning rate) or a sampler that computes differently (precision)."
)
SETUP = {
    "reward_funcs": ["leading_match"],
    "num_generations": 4,
    "prompts_per_step": 16,
    "max_completion_length": 16,
    "beta": 0.0,
    "loss_type": "grpo",
    "lr_scheduler_type": "constant",
}
"""What every arm shares: 16 prompts x G = 4, completions of up to 16 tokens, no KL penalty."""
FLOOR = 1e-9
"""The relative error's floor before log10 (fp32 resolves ~1e-7; an exact 0 would be -inf)."""


class AgreementTrainer(GRPOTrainer):
    """GRPO that, at each inner update, measures the token and sequence surrogates' gradients
    on the batch it trains (``self.agreement``: one row per inner update). The sampler runs in
    ``sampler_precision`` (autocast around generation only; the trainer keeps its own)."""

    sampler_precision = "fp32"

    def setup(self) -> None:
        super().setup()
        self.agreement: list[dict] = []

    def generate(self):
        with autocast(self.device, self.sampler_precision):
            return super().generate()

    def sampling_logprobs(self, r):
        """The sampler's log-probs as pi_old only when it computes as the trainer does; else
        pi_old is the trainer's forward (TRL's choice), and the mismatch is left to measure."""
        return super().sampling_logprobs(r) if self.sampler_precision == self.precision else None

    def update_loss(self, batch, rows, first: bool):
        loss, st, logp, logits, H = super().update_loss(batch, rows, first)
        params = [p for p in self.model.parameters() if p.requires_grad]
        mask, adv, mu_old = batch.loss_mask, batch.advantages, batch.sample_logp
        l_tok, info = token_surrogate(logp, mu_old, adv, mask)
        l_seq, seq = sequence_surrogate(logp, mu_old, adv, mask)
        g_tok = flat_grad(l_tok, params, retain_graph=True)  # [N]
        g_seq = flat_grad(l_seq, params, retain_graph=True)  # [N]
        agree = {k: float(v) for k, v in gradient_agreement(g_tok, g_seq).items()}
        k = 0 if first else self.agreement[-1]["update"] + 1
        row = {"step": self.global_step + 1, "update": k, **agree}
        row |= {"kl": float(info["kl/old"]), "seq ratio max": float(seq["ratio/seq_max"])}
        self.agreement.append(row)
        return loss, st, logp, logits, H

    def train_step(self):
        """GRPO's step; its metrics gain the mean over its inner updates of ``cos``,
        ``rel_err`` and ``kl`` (what a live figure draws, as the stored curves average)."""
        record = super().train_step()
        rows = pd.DataFrame([r for r in self.agreement if r["step"] == self.global_step + 1])
        for key in ("cos", "rel_err", "kl"):
            record.metrics[key] = float(rows[key].mean())  # NaN (no gradient) skipped
        return record


class BF16SamplerTrainer(AgreementTrainer):
    """:class:`AgreementTrainer` whose sampler decodes under bf16 autocast, the trainer in fp32:
    mu_old != pi_theta_old before any update (``labkit.experiments.precision``)."""

    sampler_precision = "bf16"


SAMPLERS = {"fp32": AgreementTrainer, "bf16": BF16SamplerTrainer}
"""An arm's ``sampler`` setting -> its trainer class (not a config field)."""
LR_HIGH, LR_LOW = 1e-3, 1e-4
ARMS = {
    "mu 1": {"num_iterations": 1, "learning_rate": LR_HIGH},
    "mu 2": {"num_iterations": 2, "learning_rate": LR_HIGH},
    "mu 4": {"num_iterations": 4, "learning_rate": LR_HIGH},
    "mu 8": {"num_iterations": 8, "learning_rate": LR_HIGH},
    "mu 4, lr 1e-4": {"num_iterations": 4, "learning_rate": LR_LOW},
    "mu 1, bf16 sampler": {"num_iterations": 1, "learning_rate": LR_HIGH, "sampler": "bf16"},
}
"""Arm -> GRPOConfig overrides (lr 1e-3 and an fp32 sampler unless the name says otherwise)."""


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed: ``SETUP`` + the arm on ``tiny-babble`` / ``addition_ramble``."""
    settings = dict(settings)
    trainer = grpo_run(
        "tiny-babble",
        settings,
        seed=seed,
        steps=steps,
        run_name=run_name,
        tick=tick,
        trainer_cls=SAMPLERS[settings.pop("sampler", "fp32")],
        task="addition_ramble",
        track_kl=False,
        save_steps=0,  # the per-update rows live in the trainer: a run is redone, not resumed
        **SETUP,
    )
    rows = pd.DataFrame(trainer.agreement)
    per_step = trainer.log.metrics[["step", "reward/mean"]]
    return Outcome(summary(rows), rows.merge(per_step, on="step"))


def loglog_slope(x, y) -> float:
    """The least-squares slope of log y on log x over the points where both are > 0 (NaN with
    fewer than 3): 1/2 when y grows as sqrt(x).

    >>> round(loglog_slope([1e-4, 1e-3, 1e-2], [3e-2, 3e-2 * 10**0.5, 3e-1]), 6)
    0.5
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = (x > 0) & (y > 0)
    if ok.sum() < 3:
        return math.nan
    return float(np.polyfit(np.log(x[ok]), np.log(y[ok]), 1)[0])


def summary(rows: pd.DataFrame) -> dict:
    """One run's per-update rows reduced: at the first inner update (update 0, where pi_theta
    = pi_theta_old) and the last (mu - 1, the stalest), means over steps of the relative error,
    of its log10 (floored at ``FLOOR``), of the cosine and of the drift KL; and over the updates
    after the first, the log-log slope of the relative error on KL, minus 1/2 (0 when the
    error is first order in delta, KL second). A batch whose advantages are all 0 has no
    gradient: its relative error and cosine are NaN (:func:`gradient_agreement`) and the means
    skip them; its drift KL counts.

    >>> r = pd.DataFrame({"step": [1, 1, 2, 2], "update": [0, 1, 0, 1], "cos": [1.0, 0.8, 1.0, 0.6],
    ...                   "rel_err": [0.0, 0.1, 1e-6, 0.2], "kl": [0.0, 0.01, 0.0, 0.04]})
    >>> s = summary(r)
    >>> s["cos (last update)"], s["log10 rel. error (first update)"], s["log10 rel. error (last update)"]
    (0.7, -7.5, -0.8494850021680094)
    >>> math.isnan(s["log-log slope (rel. error on KL) - 1/2"])    # 2 points: no slope
    True
    """
    first = rows[rows["update"] == 0]
    last = rows[rows["update"] == rows["update"].max()]
    later = rows[rows["update"] > 0]
    log10 = np.log10(rows["rel_err"].clip(lower=FLOOR))
    return {
        "rel. error (first update)": float(first["rel_err"].mean()),
        "log10 rel. error (first update)": float(log10[first.index].mean()),
        "log10 rel. error (last update)": float(log10[last.index].mean()),
        "cos (last update)": float(last["cos"].mean()),
        "KL to mu_old (last update)": float(last["kl"].mean()),
        "log-log slope (rel. error on KL) - 1/2": loglog_slope(later["kl"], later["rel_err"]) - 0.5,
    }


FIRST_ORDER = "Zheng et al. 2025, Stabilizing RL with LLMs (2512.01374)"
SOURCE = f"seed 002; {FIRST_ORDER} secs. 2.3-2.4; GSPO (2507.18071)"
STALE = f"seed 002 (policy staleness); {FIRST_ORDER} sec. 2.4"
MISMATCH = f"seed 002 (training-inference discrepancy); {FIRST_ORDER} sec. 2.4"
METRIC = "log10 rel. error (last update)"


def _grows(key: str, arm: str, baseline: str, text: str) -> Claim:
    """``arm``'s gradients part more than ``baseline``'s at the stalest update (log10 rel. error)."""
    return Claim(key, text, STALE, metric=METRIC, arm=arm, baseline=baseline, direction=1)


EXPERIMENT = Experiment(
    name="token_vs_sequence",
    lab="82_token_vs_sequence_objective",
    arms=ARMS,
    train=train,
    steps=10,
    fast_steps=2,
    curves=("update", "cos", "rel_err", "norm_ratio", "kl", "seq ratio max", "reward/mean"),
    claims=(
        Claim(
            "agree-at-sampler",
            "the token and sequence gradients agree where pi_theta = mu_old (relative error ~ 0)",
            SOURCE,
            metric="rel. error (first update)",
            arm="mu 1",
            direction=0,
            margin=1e-3,
            note="an identity: fp32 sampler and trainer agree to rounding, so only rounding is left",
        ),
        _grows("mu-2", "mu 2", "mu 1", "one stale update parts the gradients (mu 2 vs 1)"),
        _grows("mu-4", "mu 4", "mu 2", "more stale updates part them more (mu 4 vs 2)"),
        _grows("mu-8", "mu 8", "mu 4", "more stale updates part them more (mu 8 vs 4)"),
        _grows(
            "lr", "mu 4", "mu 4, lr 1e-4", "a larger learning rate parts them more (1e-3 vs 1e-4)"
        ),
        Claim(
            "bf16-sampler",
            "a bf16 sampler parts the gradients before any update (training-inference mismatch)",
            f"{MISMATCH}; Yao et al. 2025 (truncated IS)",
            metric="log10 rel. error (first update)",
            arm="mu 1, bf16 sampler",
            baseline="mu 1",
            direction=1,
        ),
        Claim(
            "first-order",
            "the gap is first order in the drift: relative error ~ sqrt(KL), a log-log slope 1/2",
            SOURCE,
            metric="log-log slope (rel. error on KL) - 1/2",
            arm="mu 8",
            direction=0,
            margin=0.25,
            note=(
                "this lab's reading of 'first order' (the gap is O(delta), KL is O(delta^2)); "
                "pooled over mu 8's updates 1-7; higher-order terms steepen it at large drift"
            ),
        ),
    ),
    live={"arms": ["mu 1", "mu 8", "mu 1, bf16 sampler"], "seeds": (0, 1), "steps": 10},
)
