"""The verdicts the stored runs gave, pinned: for each stored result (a fixed seed set, the one
its experiment names), the claims whose direction held ("reproduced") and those whose opposite
held or whose effect was too small ("not reproduced"); every other claim was inconclusive.

The README's claims table and the labs' "measured" cells are generated from the stored results,
but each lab's discussion is prose written from these verdicts. Re-running an experiment that
flips a verdict fails here: re-read that lab's discussion (the ``<!-- RESULTS_DISCUSSION -->``
cell), then update ``DECIDED``. Nothing here asserts a direction the stored run did not show."""

import importlib

import pytest

from labkit.experiments import results

DECIDED: dict[str, tuple[str, str]] = {
    "adaptive_think": (
        "no-think-obeyed think-obeyed budget-partial budget-grows think-after-rl",
        "",
    ),
    "alphazero": ("beats-random beats-mcts training-helps network-learns", ""),
    "clipping": (
        (
            "mu1-no-clip mu1-eps-irrelevant rises-with-mu-0.1 rises-with-mu-0.2 "
            "rises-with-mu-0.3 falls-with-eps-2 falls-with-eps-4"
        ),
        "",
    ),
    "curriculum": ("", ""),
    "dapo": ("dynamic-sampling", "dynamic-sampling-equal"),
    "distill_graded": ("distillation distilled-thinks equal-compute", ""),
    "double_dqn": ("dqn-overestimates double-less-bias", ""),
    "dpo_vs_grpo": (
        "online-beats-offline online-beats-epochs grpo-beats-offline chosen-falls offline-drifts",
        "grpo-vs-online",
    ),
    "dr_grpo": ("std-bias", "length-grows length-vs-dr"),
    "entropy_kl": ("collapse beta-closer-k3 beta-closer-k1", "beta-costs-reward"),
    "entropy_kl_base": ("collapse entropy-bonus beta-closer-k3 beta-closer-k1", ""),
    "gaussian_pg": ("improves baseline-faster gae-faster", ""),
    "kimi_length": ("l2s-shorter l2s-thinks", ""),
    "kimi_recheck": (
        "kimi-shorter kimi-shorter-correct kimi-rechecks l2s-shorter l2s-rechecks l2s-thinks",
        "kimi-accuracy",
    ),
    "lagrange": ("binds keeps-accuracy", "meets-bound"),
    "language": ("mixing", ""),
    "off_policy": ("cispo-keeps gspo-spread", "cispo-reward cispo-drawdown"),
    "off_policy_base": ("grpo-trains cispo-keeps gspo-spread", "cispo-reward cispo-drawdown"),
    "passk": ("pass1 maj64 passk-flat sharpens-pass sharpens-maj", ""),
    "pg_variance": (
        "unbiased-rloo unbiased-mean rloo-lowers-var-shifted",
        "rloo-lowers-var rloo-below-mean critic-memory",
    ),
    "ppo_critic": ("", "lambda-1-answer"),
    "ppo_seed": ("reward-rises entropy-bonus clamp-penalty", ""),
    "ppo_seed_stress": ("reward-rises entropy-bonus", ""),
    "precision": (
        (
            "bf16-trains fp16-trains bf16-learns mismatch-bf16 mismatch-fp16 mantissa tis-one "
            "tis-spread-fp16 tis-spread-bf16"
        ),
        "",
    ),
    "prm": ("grpo-process grpo-process-faster", ""),
    "prm_graded": ("", ""),
    "r1_pipeline": ("reasoning-rl rs-sft equal-compute", "distillation"),
    "r1_zero": ("thinking length", ""),
    "r1_zero_graded": ("hard-length steady thinks-where-hard thinks-where-it-pays", ""),
    "ref_refresh": (
        "grpo-drift grpo-penalty grpo-reward grpo-accuracy soft-drift-fixed tr-dpo-drift",
        "tr-dpo-soft tr-dpo-hard",
    ),
    "reward_hacking": (
        "overoptimised below-start kl-keeps-gold kl-same-frontier min-keeps-gold min-not-cured",
        "",
    ),
    "reward_design": ("proxy-rises shorter fix-beats", ""),
    "rft": ("", ""),
    "search": ("prm-beats-one-sample orm-beats-one-sample prm-beats-orm", ""),
    "token_vs_sequence": ("agree-at-sampler mu-2 mu-4 lr bf16-sampler", ""),
    "tools": ("accuracy when turns env-mask", ""),
    "trl_parity": (
        (
            "grpo bnpo dr-grpo dapo cispo gspo-sequence-ratio k3-kl-is-corrected k3-kl-plain "
            "advantages-scale-rewards-group advantages-scale-rewards-batch "
            "advantages-scale-rewards-none dpo-sigmoid dpo-ipo"
        ),
        "",
    ),
    "trpo": ("trpo-kl-grid trpo-collapse-grid trpo-monotonic-grid trpo-kl-lm adaptive-kl-lm", ""),
    "v32_tricks": ("keep-kl-old", "keep-reward keep-drawdown"),
    "v32_tricks_base": ("grpo-trains", ""),
    "why_not_learning": (
        (
            "no-gradient format-stalls truncation-stalls healthy-learns doctor-format "
            "doctor-truncation doctor-quiet"
        ),
        "",
    ),
}
"""Stored result -> (claims reproduced, claims not reproduced), keys in the experiment's order."""


def test_every_stored_result_is_pinned():
    assert sorted(DECIDED) == results.stored()


@pytest.mark.parametrize("name", sorted(DECIDED))
def test_the_stored_run_keeps_its_verdicts(name):
    """Judged again from the stored summaries under the experiment's claims, on its seeds."""
    exp = importlib.import_module(f"labkit.experiments.{name}").EXPERIMENT
    stored = results.load(name)
    assert stored.meta["seeds"] == list(exp.seeds), f"{name}: stored on other seeds"
    verdicts = {v.claim.key: v.verdict for v in stored.verdicts()}
    assert set(verdicts) == {c.key for c in exp.claims}, f"{name}: a claim was not judged"
    got = tuple(
        " ".join(k for k, v in verdicts.items() if v == verdict)
        for verdict in ("reproduced", "not reproduced")
    )
    assert got == DECIDED[name], (
        f"{name}: the stored verdicts changed; re-read lab {exp.lab}'s discussion, then update "
        "DECIDED in this file"
    )
