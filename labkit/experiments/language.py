"""Language consistency: a reward for thinking in one notation removes the mixing, at what cost?

DeepSeek-R1 (arXiv 2501.12948, sec. 2.3.2): R1-Zero's chains of thought mix languages; a
language-consistency reward, the proportion of target-language words in the CoT, is added to
the accuracy reward:
    r = r_accuracy + r_format + w_lc * (#steps in digits / #steps)
"Although ablation experiments show that such alignment results in a slight degradation in the
model's performance, this reward aligns with human preferences."

The toy: ``tiny-think`` writes its thoughts in digits, in letters (a=0 .. j=9) or mixes both
(``labkit.tasks.scratchpad``). Two arms from it, on the same seeds and budget (lab 90's setup,
``labkit.experiments.r1_zero.SETUP``), with and without ``language_consistency``; the mixing
rate is the share of thoughts using both notations (``labkit.experiments.r1_zero.mixed``). A
completion without a thought gets no consistency reward (None), so the consistency reward also
favours thinking in digits over answering directly.
"""

from __future__ import annotations

from labkit.experiments.arms import grpo_run
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, Outcome
from labkit.experiments.r1_zero import CURVES, HELDOUT, METRICS, SETUP, W_FORMAT, heldout
from labkit.models.policy import load_policy

CLAIM = (
    "DeepSeek-R1 (arXiv 2501.12948, sec. 2.3.2): chains of thought under RL mix languages; "
    "adding a language-consistency reward (the share of the CoT in the target language) to "
    "the accuracy reward removes the mixing, at the cost of a slight drop in accuracy."
)
W_LC = 0.5
"""Weight of the language-consistency reward."""
REWARDS = ["answer_match", "think_format", "language_consistency"]
ARMS = {
    "acc + format": {"reward_weights": [1.0, W_FORMAT, 0.0]},
    "acc + format + consistency": {"reward_weights": [1.0, W_FORMAT, W_LC]},
}
"""Arm -> weights of ``REWARDS`` (0: logged only)."""
MARGIN = 0.05
"""A 'slight' accuracy cost: at most this much held-out accuracy lost to the reward."""


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed: GRPO from ``tiny-think`` with ``REWARDS`` at the arm's weights (the
    weight-0 ``METRICS`` logged too); held-out stats after RL and the cold start's mixing."""
    n = HELDOUT["fast" if fast else "full"]
    before = heldout(*load_policy("tiny-think"), n=n, seed=seed)
    trainer = grpo_run(
        "tiny-think",
        {"reward_weights": [*settings["reward_weights"], *[0.0] * len(METRICS)]},
        seed=seed,
        steps=steps,
        run_name=run_name,
        tick=tick,
        reward_funcs=[*REWARDS, *METRICS],
        task="scratchpad",
        track_kl=False,
        save_steps=max(1, steps // 3),
        **SETUP,
    )
    after = heldout(trainer.model, trainer.tokenizer, n=n, seed=seed)
    summary = after | {"mixed before": before["mixed"], "accuracy before": before["accuracy"]}
    trainer.log.close()  # the run is done: its folder is free for a later resume
    return Outcome(summary, trainer.log.metrics)


SOURCE = "DeepSeek-R1 (DeepSeek-AI 2025, arXiv 2501.12948) sec. 2.3.2"
ARM, BASE = "acc + format + consistency", "acc + format"
EXPERIMENT = Experiment(
    name="language",
    lab="91_language_consistency",
    arms=ARMS,
    train=train,
    steps=60,
    curves=(*CURVES, "rewards/language_consistency/mean"),
    claims=(
        Claim(
            "mixing",
            "a language-consistency reward removes language mixing",
            SOURCE,
            metric="mixed",
            arm=ARM,
            baseline=BASE,
            direction=-1,
            note="Held-out share of thoughts that use both notations (digits and letters).",
        ),
        Claim(
            "cost",
            "the consistency reward costs accuracy",
            SOURCE,
            metric="accuracy",
            arm=ARM,
            baseline=BASE,
            direction=-1,
        ),
        Claim(
            "slight",
            "the accuracy cost is slight",
            SOURCE,
            metric="accuracy",
            arm=ARM,
            baseline=BASE,
            direction=0,
            margin=MARGIN,
            note=f"'Slight' taken as within ±{MARGIN} held-out accuracy.",
        ),
    ),
    live={"arms": list(ARMS), "seeds": (0, 1), "steps": 30},
)
