"""A reward that can be gamed, and the policy gaming it (lab 40), over seeds.

Amodei et al. 2016 ("Concrete Problems in AI Safety", arXiv 1606.06565, sec. 4): an agent that
optimises a proxy of what its designer wants finds the proxy's loopholes ("reward hacking"):
the proxy rises while the intended objective does not. Lab 40's proxy is a partial-credit
reward with a bug, :func:`digits_right`: the digits that match the answer from the left,
divided by the length of the *completion*, not of the answer, so dropping the last digit of a
3-digit sum (``"15"`` for ``151``) scores 1.0, as the right answer does. The remedy the lab
teaches is in the reward, not the optimiser: weight an exact-match term in
(R = 0.5 r_digits + 1.0 r_exact: a short answer scores at most 0.5, the right one 1.5), as R1's
rule-based accuracy reward checks the whole answer (arXiv 2501.12948, sec. 2.2.2).

Two arms from the shipped ``tiny`` policy on 2-digit addition, GRPOTrainer's defaults (16
prompts x G = 16 a step) for 40 steps, the lab's full run:
  gameable   r = digits_right                       (exact_match logged, weight 0)
  fixed      r = 0.5 digits_right + 1.0 exact_match
Held-out accuracy: one sample at T = 1 on each of 400 held-out prompts (``heldout_accuracy``),
before (the cold start, the run's probe seed) and after. The proxy and the length are the
training batch's: ``reward/mean`` and ``len/mean`` (tokens), the mean of the last 10 % of the
steps minus that of the first 10 %.
"""

from __future__ import annotations

from labkit.experiments.arms import addition_run, heldout_accuracy, policy_accuracy
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, Outcome
from labkit.models.policy import load_policy
from labkit.tasks import get_task

CLAIM = (
    "Reward hacking (Amodei et al. 2016, arXiv 1606.06565, sec. 4): a policy optimising a "
    "proxy reward with a loophole raises the proxy while the intended objective falls. On the "
    "toy: a partial-credit reward that divides by the completion's length is climbed by "
    "dropping digits, and held-out accuracy falls; weighting an exact-match term in closes it."
)
SOURCE = "Amodei et al. 2016, Concrete Problems in AI Safety (1606.06565) sec. 4"
REMEDY = "the lab's remedy (an exact-match term, as R1's rule-based reward, 2501.12948 sec. 2.2.2)"
HELDOUT = {"full": 400, "fast": 50}
"""Held-out prompts of the accuracy probe, one sample each at T = 1."""
GAMEABLE, FIXED = "gameable", "fixed"
ARMS = {GAMEABLE: {"reward_weights": [1.0, 0.0]}, FIXED: {"reward_weights": [0.5, 1.0]}}
"""Arm -> the weights of ``[digits_right, exact_match]``."""
CURVES = ("reward/mean", "rewards/exact_match/mean", "len/mean")


def digits_right(completions, answer, **kwargs):
    """Partial credit with a bug: digits matching the answer from the left, divided by the
    completion's length (the answer's was meant), so a right prefix scores 1.0.

    >>> digits_right(["151", "15", "152", "1"], answer=["151"] * 4)
    [1.0, 1.0, 0.6666666666666666, 1.0]
    """
    return [sum(x == y for x, y in zip(c, a)) / max(len(c), 1) for c, a in zip(completions, answer)]


def change(metrics, column: str, frac: float = 0.1) -> float:
    """The mean of ``column`` over the last ``frac`` of the steps minus the first ``frac``."""
    k = max(1, round(len(metrics) * frac))
    return float(metrics[column].iloc[-k:].mean() - metrics[column].iloc[:k].mean())


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed: held-out accuracy before, GRPO on addition from ``tiny`` with
    ``[digits_right, exact_match]`` at the arm's weights, held-out accuracy after; the proxy's,
    the length's and the batch accuracy's change over the run."""
    n = HELDOUT["fast" if fast else "full"]
    model, tok = load_policy("tiny")
    before = policy_accuracy(model, tok, get_task("addition"), n, seed=seed)
    trainer = addition_run(
        settings,
        seed=seed,
        steps=steps,
        run_name=run_name,
        tick=tick,
        reward_funcs=[digits_right, "exact_match"],
    )
    m = trainer.log.metrics
    summary = {
        "accuracy before": before,
        "accuracy": heldout_accuracy(trainer, n, seed=seed),
        "reward change": change(m, "reward/mean"),
        "length change": change(m, "len/mean"),
        "batch accuracy change": change(m, "rewards/exact_match/mean"),
    }
    summary["accuracy gain"] = summary["accuracy"] - before
    trainer.log.close()
    return Outcome(summary, m)


EXPERIMENT = Experiment(
    name="reward_design",
    lab="40_reward_design",
    arms=ARMS,
    train=train,
    steps=40,
    curves=CURVES,
    claims=(
        Claim(
            "proxy-rises",
            "the policy raises the gameable proxy reward",
            SOURCE,
            metric="reward change",
            arm=GAMEABLE,
            note="Training batch's reward/mean, last 10 % of the steps minus the first 10 %.",
        ),
        Claim(
            "accuracy-falls",
            "... while the intended objective, accuracy, falls",
            SOURCE,
            metric="accuracy gain",
            arm=GAMEABLE,
            direction=-1,
            note="Held-out accuracy after RL minus the cold start's (400 prompts, T = 1).",
        ),
        Claim(
            "shorter",
            "the loophole it uses: shorter answers (digits dropped)",
            SOURCE,
            metric="length change",
            arm=GAMEABLE,
            direction=-1,
            note="Training batch's len/mean (tokens), last 10 % minus first 10 %.",
        ),
        Claim(
            "fix-beats",
            "an exact-match term closes the loophole: accuracy ends higher than under the proxy",
            REMEDY,
            metric="accuracy gain",
            arm=FIXED,
            baseline=GAMEABLE,
        ),
        Claim(
            "fix-improves",
            "... and the fixed reward raises accuracy",
            REMEDY,
            metric="accuracy gain",
            arm=FIXED,
        ),
    ),
    live={"arms": list(ARMS), "seeds": (0, 1), "steps": 20},
)
