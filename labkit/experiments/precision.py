"""Lab 51's CPU stand-in: GRPO in fp32, bf16 and fp16 autocast, and how far apart the
sampler's and the trainer's log-probs are per precision.

Training: the tiny policy on 2-digit addition (``labkit.experiments.gpu.CPU``: 8 prompts x 8, lr
3e-4, 30 steps) under each autocast from the same seeds, held-out sampled accuracy before and
after. Mixed-precision training (fp16 with loss scaling: Micikevicius et al. 2018, arXiv
1710.03740; bf16: Kalamkar et al. 2019, arXiv 1905.12322) reaches fp32's results.

The log-probs: the sampler decodes token by token with a KV cache; the trainer runs one forward
over each prompt packed with its completions (``labkit.models.prefix``). In fp32 both give the
same numbers to rounding; under bf16 or fp16 autocast the two computations round differently, so
pi_sample != pi_train for the same weights, and a ratio pi_theta / pi_sample is already off 1
before any update. TRL corrects the same mismatch (vLLM sampler vs trainer) with truncated
importance sampling: weight each token by min(pi_train / pi_sample, C) (Yao et al. 2025, "Your
efficient RL framework secretly brings you off-policy RL training"; TRL's
``vllm_importance_sampling_*``; labkit's ``tis_cap``).

What :func:`logprob_mismatch` measures, per precision, on the cold start with the run's seed:
``|dlogp|`` = mean over completion tokens of |log pi_sample - log pi_train| (same precision),
``|dlogp| vs fp32`` = the trainer's low-precision log-probs against an fp32 full forward.
TIS weights w = min(pi_train / pi_sample, C) (``labkit.core.tis``, C = ``TIS_CAP``): ``w min``,
``w max`` with the trainer in the sampler's precision (labkit's GRPOTrainer: one autocast for
both), and with an fp32 trainer (a low-precision sampler such as vLLM in bf16 feeding an fp32
trainer): ``w min|max (fp32 trainer)``, ``clipped (fp32 trainer)`` = fraction of tokens above C.

Departure: on one CPU engine sampler and trainer share kernels, so the mismatch comes only from
the order of operations and the autocast; a GPU sampler (vLLM) adds its own kernels.
"""

from __future__ import annotations

import torch

from labkit.core.logprobs import masked_mean
from labkit.core.tis import truncated_is_weight
from labkit.experiments.arms import grpo_run
from labkit.experiments.claims import Claim
from labkit.experiments.gpu import CPU
from labkit.experiments.harness import Experiment, Outcome
from labkit.models.device import autocast
from labkit.models.policy import load_policy
from labkit.models.rollout import completion_logprobs, rollout
from labkit.runs.evaluate import accuracy
from labkit.tasks import get_task, max_completion_tokens

TIS_CAP = 2.0
"""C of the TIS weights shown (Yao et al. 2025 use 2; TRL's default is 3)."""
CLAIM = (
    "Mixed precision trains like fp32 (bf16: Kalamkar et al. 2019, arXiv 1905.12322; fp16 with "
    "loss scaling: Micikevicius et al. 2018, arXiv 1710.03740). The sampler's log-probs differ "
    "from the trainer's for the same weights (Yao et al. 2025, fengyao.notion.site/off-policy-rl; "
    "TRL's truncated importance sampling), low precision is one cause (its error grows as the "
    "mantissa shrinks: bf16 8 bits, fp16 11, fp32 24), and the truncated IS weights "
    "min(pi_train / pi_sample, C) are 1 where the two agree and spread where they do not."
)
PRECISIONS = ("fp32", "fp16", "bf16")


@torch.no_grad()
def logprob_mismatch(
    model, tokenizer, prompts: list[str], precision: str, max_len: int, seed: int = 0
) -> dict:
    """Sample under ``precision`` (cached decoding), then compare its log-probs of the sampled
    tokens with a full forward in the same precision and in fp32 (:data:`CLAIM`)."""
    dev = next(model.parameters()).device
    gen = torch.Generator(dev).manual_seed(seed)
    with autocast(dev, precision):
        r = rollout(model, tokenizer, prompts, max_len, temperature=1.0, generator=gen)
        train = completion_logprobs(model, r)  # [B, T]
    full32 = completion_logprobs(model, r)  # [B, T]
    mask = r.completion_mask
    d = (r.sample_logp - train).abs()  # [B, T]
    ratio = (train - r.sample_logp).exp()  # [B, T] pi_train / pi_sample
    _, same = truncated_is_weight(train, r.sample_logp, mask, TIS_CAP)  # trainer in `precision`
    _, vs32 = truncated_is_weight(full32, r.sample_logp, mask, TIS_CAP)  # trainer in fp32
    stats = torch.stack(
        [
            masked_mean(d, mask),
            (d * mask).max(),
            masked_mean((train - full32).abs(), mask),
            masked_mean((ratio - 1).abs(), mask),
            same["tis/weight_min"],
            same["tis/weight_max"],
            vs32["tis/weight_min"],
            vs32["tis/weight_max"],
            vs32["tis/clipped_frac"],
        ]
    ).tolist()  # one sync
    keys = (
        "|dlogp|",
        "max |dlogp|",
        "|dlogp| vs fp32",
        "|ratio - 1|",
        "w min",
        "w max",
        "w min (fp32 trainer)",
        "w max (fp32 trainer)",
        "clipped (fp32 trainer)",
    )
    return {"precision": precision, **dict(zip(keys, stats)), "tokens": int(mask.sum())}


def spread(stats: dict, trainer: str = "fp32 trainer") -> float:
    """max |w - 1| of a :func:`logprob_mismatch` row: with an fp32 trainer, or (``trainer=""``)
    with the trainer in the sampler's precision.

    >>> spread({"w min (fp32 trainer)": 0.9, "w max (fp32 trainer)": 1.05})
    0.09999999999999998
    """
    suffix = f" ({trainer})" if trainer else ""
    return max(1 - stats[f"w min{suffix}"], stats[f"w max{suffix}"] - 1)


def mismatch_summary(precision: str, seed: int, n_prompts: int) -> dict:
    """:func:`logprob_mismatch` of the cold start under ``precision``: 4 samples of each of the
    first ``n_prompts`` held-out prompts, drawn with ``seed``, as summary columns."""
    model, tok = load_policy("tiny")
    task = get_task("addition")
    prompts = [e.prompt for e in task.heldout[:n_prompts] for _ in range(4)]
    m = logprob_mismatch(model, tok, prompts, precision, max_completion_tokens(task), seed)
    return {
        "|dlogp| sampler vs trainer": m["|dlogp|"],
        "|dlogp| vs fp32": m["|dlogp| vs fp32"],
        "max |w - 1| (fp32 trainer)": spread(m),
        "max |w - 1| (same precision)": spread(m, ""),
        "clipped (fp32 trainer)": m["clipped (fp32 trainer)"],
    }


ARMS = {
    "fp32": {"precision": "fp32"},
    "bf16": {"precision": "bf16"},
    "fp16": {"precision": "fp16"},
    "bf16 + TIS": {"precision": "bf16", "tis_cap": TIS_CAP},
}
"""Arm -> autocast (fp16 with a gradient scaler) and, for TIS, the cap C."""
HELDOUT = {"full": 400, "fast": 32}
"""Held-out prompts per accuracy probe, one sample each at T = 1 (s.e. ~0.025 at 400)."""
MISMATCH = {"full": 128, "fast": 8}
"""Held-out prompts (x 4 samples) of the log-prob mismatch probe."""


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed: the mismatch of the arm's precision on the cold start, then GRPO on
    addition under that autocast, held-out accuracy before and after."""
    size = "fast" if fast else "full"
    out = mismatch_summary(settings["precision"], seed, MISMATCH[size])
    model, tok = load_policy("tiny")
    task = get_task("addition")
    probe = task.heldout[: HELDOUT[size]]
    max_len = max_completion_tokens(task)
    before = accuracy(model, tok, task, probe, max_completion_length=max_len, seed=seed + 1)
    fixed = {k: v for k, v in CPU.items() if k != "model"}
    trainer = grpo_run(
        "tiny",
        settings,
        seed=seed,
        steps=steps,
        run_name=run_name,
        tick=tick,
        task="addition",
        track_kl=False,
        save_steps=max(1, steps // 3),
        **fixed,
    )
    after = accuracy(trainer.model, tok, task, probe, max_completion_length=max_len, seed=seed + 1)
    trainer.log.close()  # the run is done: its folder is free for a later resume
    out |= {"held-out before": before, "held-out accuracy": after, "held-out gain": after - before}
    return Outcome(out, trainer.log.metrics)


YAO = (
    "Yao et al. 2025, 'Your efficient RL framework secretly brings you off-policy RL training' "
    "(fengyao.notion.site/off-policy-rl); TRL's vllm_importance_sampling_correction"
)
MARGIN = 0.05
"""'Trains like fp32': held-out accuracy within this much of fp32's on the same seeds."""
ONE_ENGINE = (
    "One CPU engine: sampler and trainer share kernels, so the mismatch comes only from the "
    "order of operations under autocast; a GPU sampler (vLLM) adds its own."
)


def _close(key, text, source, arm, baseline, note=""):
    """An equivalence claim on held-out accuracy (within ``MARGIN``)."""
    return Claim(key, text, source, "held-out accuracy", arm, baseline, 0, margin=MARGIN, note=note)


def _above(key, text, metric, arm, baseline, note=""):
    """arm > baseline on ``metric``, a claim of Yao et al.'s note."""
    return Claim(key, text, YAO, metric, arm, baseline, note=note)


EXPERIMENT = Experiment(
    name="precision",
    lab="51_gpu_gsm8k_lora",
    arms=ARMS,
    train=train,
    steps=30,
    seeds=tuple(range(20)),
    curves=("reward/mean", "accuracy", "tis/weight_min", "tis/weight_max"),
    claims=(
        _close(
            "bf16-trains",
            "bf16 autocast trains GRPO like fp32",
            "Kalamkar et al. 2019 (arXiv 1905.12322); unslothai/unsloth #2783, "
            "huggingface/trl #2906",
            "bf16",
            "fp32",
            note=f"'Like fp32': held-out accuracy within ±{MARGIN} of fp32's, same seeds.",
        ),
        _close(
            "fp16-trains",
            "fp16 autocast with a gradient scaler trains GRPO like fp32",
            "Micikevicius et al. 2018 (arXiv 1710.03740)",
            "fp16",
            "fp32",
        ),
        Claim(
            "bf16-learns",
            "GRPO in bf16 autocast raises held-out accuracy",
            "DeepSeekMath (Shao et al. 2024, arXiv 2402.03300)",
            metric="held-out gain",
            arm="bf16",
        ),
        _above(
            "mismatch-bf16",
            "bf16 makes sampler and trainer log-probs disagree",
            "|dlogp| sampler vs trainer",
            "bf16",
            "fp32",
            note=ONE_ENGINE,
        ),
        _above(
            "mismatch-fp16",
            "fp16 makes sampler and trainer log-probs disagree",
            "|dlogp| sampler vs trainer",
            "fp16",
            "fp32",
            note=ONE_ENGINE,
        ),
        _above(
            "mantissa",
            "the error grows as the mantissa shrinks (bf16: 8 bits, fp16: 11)",
            "|dlogp| vs fp32",
            "bf16",
            "fp16",
        ),
        Claim(
            "tis-one",
            "TIS weights are 1 where sampler and trainer agree (fp32)",
            YAO,
            metric="max |w - 1| (fp32 trainer)",
            arm="fp32",
            direction=0,
            margin=1e-4,
        ),
        _above(
            "tis-spread-fp16",
            "TIS weights spread as the sampler's precision drops: fp16 over fp32",
            "max |w - 1| (fp32 trainer)",
            "fp16",
            "fp32",
        ),
        _above(
            "tis-spread-bf16",
            "TIS weights spread as the sampler's precision drops: bf16 over fp16",
            "max |w - 1| (fp32 trainer)",
            "bf16",
            "fp16",
        ),
        _above(
            "tis-trains",
            "TIS raises held-out accuracy under a bf16 sampler",
            "held-out accuracy",
            "bf16 + TIS",
            "bf16",
            note=ONE_ENGINE,
        ),
    ),
    live={"arms": ["fp32", "bf16"], "seeds": tuple(range(8)), "steps": 30},
)
