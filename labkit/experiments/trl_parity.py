"""Is labkit's loss TRL's loss? The same batch through TRL 1.16's own code and labkit's, for
every GRPO loss type both have, GSPO's sequence ratio, the k3 KL term, the three ways TRL scales
group advantages, and DPO's sigmoid and IPO losses (``trl_beside``, ``trl_beside_dpo``).

An arm is one such piece; a seed is a stream of random batches (a new shape, padding, ratios
off 1 so clipping binds, rewards with ties); a step is one batch. Each batch records
|TRL - labkit| of the loss, of its gradient w.r.t. the log-probs (the largest over tokens), of
the advantages and of the KL that TRL logs; a run's summary is the largest over its batches.

Settings chosen before the run: GRPOConfig's defaults (epsilon 0.2) but DAPO's epsilon_high
0.28 and beta = 0.04 (DeepSeekMath's) for the KL arms; CISPO's cap 1.2 and GSPO's epsilon 3e-2,
not the recommended 5.0 and 3e-4, so that on these batches (|log ratio| ~ 0.3 per token) the
cap binds on some tokens and the sequence clip on some sequences, not none or all; DPO's
beta 0.1 (TRL's default). The margin 1e-5 is the tolerance of ``tests/test_core_trl_parity.py``:
float32 rounding over a few hundred terms, ~2e-6 at IPO's loss of ~25.
"""

from __future__ import annotations

import math

from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, Outcome, slug
from labkit.experiments.trl_beside import (
    Side,
    advantages_labkit,
    advantages_trl,
    grpo_labkit,
    grpo_trl,
    make_batch,
)
from labkit.experiments.trl_beside_dpo import dpo_labkit, dpo_trl, make_pairs
from labkit.runs.log import RunLog, runs_root

CLAIM = (
    "labkit's GRPO-family losses, its k3 KL term, its group advantages and its DPO losses "
    "compute what TRL 1.16's GRPOTrainer and DPOTrainer compute: on the same batch, the same "
    "value and the same gradient w.r.t. the log-probs, to float32 rounding."
)
MARGIN = 1e-5
"""|TRL - labkit| below this counts as the same (absolute, in the loss's units)."""
SIDES = {
    "grpo": (make_batch, grpo_trl, grpo_labkit),
    "advantages": (make_batch, advantages_trl, advantages_labkit),
    "dpo": (make_pairs, dpo_trl, dpo_labkit),
}
"""A piece's batch maker, TRL's side and labkit's side."""
LOSS = "TRL 1.16 `GRPOTrainer._compute_loss`"
ADV = "TRL 1.16 `GRPOTrainer._generate_and_score_completions`"
DPO = "TRL 1.16 `DPOTrainer._compute_loss`"
SAME = "equals TRL's on the same batch, value and gradient"


def _grpo(**cfg) -> dict:
    return {"side": "grpo", **cfg}


PIECES = [  # (arm, settings, the claim, its source)
    (
        "grpo",
        _grpo(loss_type="grpo"),
        f"GRPO loss {SAME}",
        f"{LOSS}; Shao et al. 2024 (2402.03300) eq. 3",
    ),
    ("bnpo", _grpo(loss_type="bnpo"), f"BNPO loss (every token equal) {SAME}", LOSS),
    (
        "dr_grpo",
        _grpo(loss_type="dr_grpo"),
        f"Dr. GRPO loss {SAME}",
        f"{LOSS}; Liu et al. 2025 (2503.20783)",
    ),
    (
        "dapo",
        _grpo(loss_type="dapo", epsilon_high=0.28),
        f"DAPO loss (token-level, clip-higher) {SAME}",
        f"{LOSS}; Yu et al. 2025 (2503.14476)",
    ),
    (
        "cispo",
        _grpo(loss_type="cispo", epsilon_high=1.2),
        f"CISPO loss {SAME}",
        f"{LOSS}; MiniMax 2025 (2506.13585)",
    ),
    (
        "GSPO (sequence ratio)",
        _grpo(loss_type="grpo", importance_sampling_level="sequence", epsilon=3e-2),
        f"GSPO loss {SAME}",
        f"{LOSS}; Zheng et al. 2025 (2507.18071)",
    ),
    (
        "k3 KL, IS-corrected",
        _grpo(loss_type="grpo", beta=0.04),
        f"GRPO loss with the importance-weighted k3 KL term {SAME}; so does the KL it logs",
        f"{LOSS}, use_bias_correction_kl; DeepSeek-AI 2025 (2512.02556)",
    ),
    (
        "k3 KL, plain",
        _grpo(loss_type="grpo", beta=0.04, use_bias_correction_kl=False),
        f"GRPO loss with the k3 KL term {SAME}; so does the KL it logs",
        f"{LOSS}; Shao et al. 2024 (2402.03300) eq. 4; Schulman 2020",
    ),
    *(
        (
            f"advantages, scale_rewards={s}",
            {"side": "advantages", "scale_rewards": s},
            f"group advantages with scale_rewards='{s}' equal TRL's on the same rewards",
            ADV + paper,
        )
        for s, paper in (
            ("group", "; Shao et al. 2024 (2402.03300) sec. 4.1.2"),
            ("batch", ""),
            ("none", "; Liu et al. 2025 (2503.20783)"),
        )
    ),
    (
        "DPO, sigmoid",
        {"side": "dpo", "loss_type": "sigmoid", "beta": 0.1},
        f"DPO loss {SAME}",
        f"{DPO}; Rafailov et al. 2023 (2305.18290) eq. 7",
    ),
    (
        "DPO, ipo",
        {"side": "dpo", "loss_type": "ipo", "beta": 0.1},
        f"IPO loss (on per-token means, as TRL's) {SAME}",
        f"{DPO}; Azar et al. 2023 (2310.12036) eq. 17",
    ),
]
ARMS = {arm: settings for arm, settings, _, _ in PIECES}
DIFFS = ("|loss diff|", "max |grad diff|", "max |adv diff|", "|KL diff|")
"""What a batch compares; "max |diff|" is the largest of them, the claims' metric."""


def compare(settings: dict, seed: int) -> tuple[Side, Side]:
    """(TRL's side, labkit's side) of the piece ``settings`` on the batch of ``seed``."""
    settings = dict(settings)
    make, trl, ours = SIDES[settings.pop("side")]
    batch = make(seed)
    return trl(batch, **settings), ours(batch, **settings)


def differences(trl: Side, ours: Side) -> dict:
    """One batch's row: |TRL - labkit| of each thing both sides report, their largest, and
    TRL's clip fraction and |loss| (the scale the differences are read against)."""
    if trl.grad is None:
        d = {"max |adv diff|": (trl.value - ours.value).abs().max().item()}
    else:
        d = {
            "|loss diff|": (trl.value - ours.value).abs().item(),
            "max |grad diff|": (trl.grad - ours.grad).abs().max().item(),
        }
    kl = trl.stats.get("kl"), ours.stats.get("kl")  # logged when beta > 0
    if kl != (None, None):
        d["|KL diff|"] = math.inf if None in kl else abs(kl[0] - kl[1])
    # NaN on either side is a disagreement: inf, never dropped as a missing value by the claims
    d = {k: (v if not math.isnan(v) else math.inf) for k, v in d.items()}
    d["max |diff|"] = max(d.values())
    if trl.stats.get("clipped") is not None:
        d["clipped (frac)"] = trl.stats["clipped"]
    if trl.grad is not None:
        d["|loss|"] = trl.value.abs().item()
    return d


def on_batch(arm: str, seed: int = 0) -> dict:
    """``arm`` on the batch of ``seed`` (the stored run's first batch of that seed): TRL's loss,
    labkit's, and the batch's row of differences."""
    trl, ours = compare(ARMS[arm], seed)
    losses = {"TRL": trl.value.item(), "labkit": ours.value.item()} if trl.grad is not None else {}
    return {**losses, **differences(trl, ours)}


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """``steps`` random batches of ``seed`` through TRL's side and labkit's, each batch a row of
    the run log; the summary is each difference's largest and the clip fraction's mean."""
    log = RunLog(runs_root() / run_name, {"experiment": "trl_parity", "arm": arm, **settings})
    try:
        for k in range(steps):
            trl, ours = compare(settings, seed=1000 * seed + k)
            log.log_step({"step": k + 1, **differences(trl, ours)})
            tick(k + 1, steps)
    finally:
        log.close()
    m = log.metrics
    summary = {c: float(m[c].max()) for c in ("max |diff|", *DIFFS) if c in m}
    summary |= {c: float(m[c].mean()) for c in ("clipped (frac)", "|loss|") if c in m}
    return Outcome(summary, m)


CLAIMS = tuple(
    Claim(
        slug(arm),
        f"labkit's {text}",
        source,
        metric="max |diff|",
        arm=arm,
        direction=0,
        margin=MARGIN,
    )
    for arm, _, text, source in PIECES
)

EXPERIMENT = Experiment(
    name="trl_parity",
    lab="53_trl_beside_labkit",
    arms=ARMS,
    train=train,
    steps=10,
    fast_steps=2,
    seeds=tuple(range(8)),
    claims=CLAIMS,
    curves=("max |diff|", "clipped (frac)"),
    live={"arms": ["grpo", "dapo", "DPO, sigmoid"], "seeds": (0, 1), "steps": 10},
)
