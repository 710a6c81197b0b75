"""Language consistency: a reward for thinking in one notation removes the mixing, at what cost?

DeepSeek-R1 (arXiv 2501.12948, sec. 2.3.2): R1-Zero's chains of thought mix languages; a
language-consistency reward, the proportion of target-language words in the CoT, is added to
the accuracy reward:
    r = r_accuracy + r_format + w_lc * (#steps in digits / #steps)
"Although ablation experiments show that such alignment results in a slight degradation in the
model's performance, this reward aligns with human preferences."

The toy: ``tiny-think`` writes its thoughts in digits, in letters (a=0 .. j=9) or mixes both
(``labkit.tasks.scratchpad``). Two GRPO runs from it, same seed and budget, with and without
``language_consistency``; the mixing rate is the share of thoughts using both notations
(``labkit.experiments.r1_zero.mixed``). A completion without a thought gets no consistency
reward (None), so the consistency reward also favours thinking in digits over answering directly.
"""

from __future__ import annotations

import pandas as pd
import torch

from labkit.experiments.r1_zero import W_FORMAT, heldout, slope
from labkit.experiments.r1_zero import single_run as train
from labkit.models.policy import load_policy

CLAIM = (
    "DeepSeek-R1 (arXiv 2501.12948, sec. 2.3.2): chains of thought under RL mix languages; "
    "adding a language-consistency reward (the share of the CoT in the target language) to "
    "the accuracy reward removes the mixing, at the cost of a slight drop in accuracy."
)
W_LC = 0.5
"""Weight of the language-consistency reward."""
REWARDS = ["answer_match", "think_format", "language_consistency"]
VARIANTS = {
    "acc + format": [1.0, W_FORMAT, 0.0],
    "acc + format + consistency": [1.0, W_FORMAT, W_LC],
}
"""name -> weights of ``REWARDS`` (0: logged only)."""
MARGIN = 0.05
"""A 'slight' accuracy cost: at most this much held-out accuracy lost to the reward."""


def run(
    fast: bool = False,
    seed: int = 0,
    steps: int | None = None,
    n_eval: int | None = None,
    progress: bool = True,
) -> dict:
    """Both ``VARIANTS`` from ``tiny-think`` (full 60 steps, fast 8), held-out stats before
    and after. Returns ``{"runs", "table", "config"}``."""
    torch.set_num_threads(1)
    steps, n_eval = steps or (8 if fast else 60), n_eval or (100 if fast else 300)
    before = heldout(*load_policy("tiny-think"), n=n_eval, seed=seed)
    runs, rows = {}, []
    for name, weights in VARIANTS.items():
        trainer, secs = train(
            name, "tiny-think", REWARDS, weights, steps, seed, progress, prefix="lab91-"
        )
        runs[name] = trainer.log
        after = heldout(trainer.model, trainer.tokenizer, n=n_eval, seed=seed)
        m = trainer.log.metrics
        rows.append(
            {
                "run": name,
                **{f"{k} before": before[k] for k in ("accuracy", "mixed")},
                **{f"{k} after": after[k] for k in ("accuracy", "mixed", "think")},
                "slope mixed (batch)": slope(m, "rewards/mixed/mean"),
                "seconds": secs,
            }
        )
    return {
        "runs": runs,
        "table": pd.DataFrame(rows).set_index("run"),
        "config": {"steps": steps, "seed": seed, "n_eval": n_eval, "w_lc": W_LC},
    }


def verdict(results: dict) -> str:
    """Both halves of the claim, from the held-out numbers after RL."""
    t = results["table"]
    a, c = t.loc["acc + format"], t.loc["acc + format + consistency"]
    less_mixing = c["mixed after"] < a["mixed after"]
    cost = a["accuracy after"] - c["accuracy after"]
    return "\n".join(
        [
            (
                f"mixing rate of thoughts (held-out, T=1): {a['mixed after']:.3f} without, "
                f"{c['mixed after']:.3f} with the consistency reward (cold start "
                f"{a['mixed before']:.3f})."
            ),
            (
                "REPRODUCED (mixing): the consistency reward lowers mixing."
                if less_mixing
                else "NOT REPRODUCED (mixing): the consistency reward does not lower mixing."
            ),
            (
                f"accuracy: {a['accuracy after']:.3f} without, {c['accuracy after']:.3f} with "
                f"(cost {cost:+.3f}; 'slight' means <= {MARGIN})."
            ),
            (
                "REPRODUCED (cost): a slight drop in accuracy."
                if 0 < cost <= MARGIN
                else "NOT REPRODUCED (cost): no accuracy drop; the reward is free here."
                if cost <= 0
                else f"NOT REPRODUCED (cost): the drop {cost:.3f} is larger than {MARGIN}."
            ),
        ]
    )
