"""DeepSeek-V3.2's two off-policy tricks on the toy, under mu > 1 (lab 81).

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
32 prompts x 4, ``loss_type="grpo"``, beta = 0). Departures: labkit samples with the trained
model, so pi_old is recomputed by the trainer (the report's pi_old is the inference engine's
probability, which also carries train/inference mismatch); without the keep mask, labkit's
pi_old is untruncated, so the ratio pi_theta / pi_old is consistent but both differ from the
truncated sampler mu: :func:`sampling_mismatch` measures that gap.
"""

from __future__ import annotations

import pandas as pd
import torch

from labkit.algos.grpo import GRPOTrainer
from labkit.experiments.off_policy import STRESS, compare_stability, stability
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
geometric-mean ratio is below PPO-clip's lower bound; it masks 5-7 % of sequences under STRESS."""
TOP_P = 0.9


def arms(delta: float = DELTA, top_p: float = TOP_P) -> dict:
    """name -> GRPOConfig overrides: the masking pair and the keep-sampling-mask pair."""
    return {
        "grpo": {},
        f"grpo + seq mask (delta {delta:g})": {"off_policy_mask": delta},
        f"top_p {top_p:g}": {"top_p": top_p},
        f"top_p {top_p:g} + keep mask": {"top_p": top_p, "truncated_logprobs": True},
    }


def extra(metrics: pd.DataFrame) -> dict:
    """What the stress table lacks: the masked fraction and the entropy at the end."""
    q = max(1, len(metrics) // 4)
    frac = metrics["mask/off_policy_frac"].mean() if "mask/off_policy_frac" in metrics else 0.0
    return {"masked frac": frac, "entropy (last 1/4)": metrics["entropy"].iloc[-q:].mean()}


def run(
    fast: bool = False,
    seeds=(0, 1),
    steps: int | None = None,
    delta: float = DELTA,
    top_p: float = TOP_P,
    stress: dict | None = None,
    progress: bool = True,
) -> dict:
    """Each arm of :func:`arms` under ``STRESS`` (updated by ``stress``) on each seed. Full: 60
    steps x 2 seeds; fast: 6 steps x 1 seed. Returns ``{"table", "logs" (first seed),
    "mismatch", "config"}``."""
    stress = {**STRESS, "loss_type": "grpo", **(stress or {})}
    steps = steps or (6 if fast else 60)
    seeds = seeds[:1] if fast else seeds
    rows, logs = [], {}
    for seed in seeds:
        for name, kw in arms(delta, top_p).items():
            tr = GRPOTrainer(
                "tiny", task="addition", seed=seed, max_steps=steps, **{**stress, **kw}
            )
            log = tr.train(progress=progress)
            rows.append({"arm": name, "seed": seed, **stability(log.metrics), **extra(log.metrics)})
            if seed == seeds[0]:
                logs[name] = log
    return {
        "table": pd.DataFrame(rows),
        "logs": logs,
        "mismatch": sampling_mismatch(seed=seeds[0], top_p=top_p),
        "config": {"steps": steps, "seeds": list(seeds), "delta": delta, "top_p": top_p, **stress},
    }


def summary(results: dict) -> pd.DataFrame:
    """The table averaged over seeds, one row per arm."""
    return results["table"].drop(columns="seed").groupby("arm", sort=False).mean()


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


def verdict(results: dict) -> str:
    """Plain words with the numbers: does each trick lower the drawdown without lowering the
    final reward, and what does the keep mask change in ratio spread and kl/old?"""
    t, names, mm = summary(results), list(summary(results).index), results["mismatch"]
    lines = [
        (
            f"sampling mismatch without the keep mask (top_p {results['config']['top_p']}): "
            f"{mm['truncated steps frac']:.2f} of tokens were sampled from a truncated step; "
            f"log mu - log pi = {mm['log mu - log pi mean']:.3f} on average "
            f"(max {mm['log mu - log pi max']:.3f})."
        )
    ]
    for name, row in t.iterrows():
        lines.append(
            f"{name}: reward {row['reward (last 1/4)']:.3f}, drawdown {row['drawdown']:.3f}"
            f", ratio [{row['ratio/min']:.3g}, {row['ratio/max']:.3g}], kl/old "
            f"{row['kl/old']:.3g}, masked {row['masked frac']:.3f}, entropy "
            f"{row['entropy (last 1/4)']:.3f}"
        )
    for base, trick, what in (
        (names[0], names[1], "off-policy sequence masking"),
        (names[2], names[3], "keep sampling mask"),
    ):
        lines.append(compare_stability(t, base, trick, f"{what} more stable"))
    return "\n".join(lines)
