"""PPO with step rewards and its critic: GAE's lambda, whitening and a critic warm-up, one at a time.

PPO with dense step rewards on the scratchpad task (``labkit.experiments.prm``'s set-up: 16
prompts x 4 from ``tiny-think``, 64 tokens, lr 2e-4, no KL) gets r_t = 0.25 on the last token
of each right thought step (``labkit.algos.process.process_token_score``; four steps, so a
right thought is worth a right answer) and the outcome on the last token. Its defaults (GAE
lambda 0.95, advantages whitened over the batch, a fresh critic: a zero-initialised head on the
policy's trunk) decide where that credit lands. With V = 0, A_t = sum_l lambda^l r_{t+l}: the
outcome reaches a token lambda^d times weaker, d its distance to the end (GAE, Schulman et al.
2016, arXiv 1506.02438, eq. 16; the "reward signal decay" of VC-PPO, Yuan et al. 2025, arXiv
2503.01491, sec. 3.2), while the step rewards sit within a few tokens of the thought's tokens;
whitening then subtracts the batch mean, so tokens whose return-to-go is below the average
(an answer after the step rewards are spent) get negative advantages however right they are.
A critic that knows V(s_t) removes both effects; a fresh one does not (VC-PPO's "value
initialisation bias", sec. 3.1).

Arms, each changing one critic setting from the defaults (step rewards on in every arm):
  PPO, step rewards         the defaults
  ..., lambda 1             GAE lambda = 1: Monte-Carlo returns, no decay (Schulman et al. 2016)
  ..., no whitening         A_t as GAE gives it
  ..., critic warm-up       ``WARMUP`` critic-only rounds before the policy's first update
                            (``PPOConfig.value_warmup_steps``; VC-PPO's value pretraining,
                            sec. 4.1; Zheng et al. 2023, arXiv 2307.04964, on the critic's
                            initialisation); the trunk frozen meanwhile, so the policy starts
                            where the others do, with a critic fitted to its returns
Logged each step (:class:`CriticProbePPOTrainer`): the mean advantage the loss uses over the
answer's tokens (from ``<answer>`` through the eos) and over the tokens before them.

Why the toy lets the effect happen, and what would falsify the reading: the cold start thinks on
some prompts and answers directly on others; after a thought's last step reward come about 16
tokens of tags and then the answer's ~19 (``</think><answer>25</answer>`` + eos), so with V = 0
the outcome reaches the answer's first token 0.95^18 ~ 0.4 times weaker. If a critic setting is what sinks the answer tokens,
changing it should lift the answer tokens' advantage at the first steps, the held-out accuracy
after RL, and cut the share of completions that run out of tokens. If none of the three arms
differs from the defaults, the critic is not the reason.

The rules, fixed before any run: each claim below, paired over the five seeds, decided by the
95 % Student-t interval of the per-seed differences (``claims``).
Summaries: held-out accuracy, think rate, right steps and truncated share after RL (one sample
at T = 1 on ``prm.HELDOUT`` prompts, the run's seed); the training batches' accuracy and
truncated share over the last quarter; the answer tokens' and the other tokens' mean advantage
over the first ``FIRST`` steps.

Budget: ``steps`` = 20, 5 seeds x 4 arms (``python scripts/run_experiment.py ppo_critic
--workers 2``); PPO with outcome rewards only is left out for the budget (add
``ARMS["PPO, outcome"] = {}`` to run it). Pilot, for timing only (seed 100, one thread, ``PILOT``):
PPO with step rewards 3.4 s a step at load ~3.6; the warm-up arm, 3 steps with the full probe,
at load ~5.8: step 1 with its 10 warm-up rounds 43.6 s (3.8 s a round), then 6.5 and 5.4 s a
step, the held-out probe 4.9 s. At the load-3.6 rates (a round ~2.3 s): 20 runs x (20 x 3.4 +
4 s) + 5 warm-ups x 23 s ~ 1,550 s of one-thread work, about 13 minutes on two workers.
Departures: no KL penalty (beta = 0, as the GRPO arms of ``prm``), and one lambda for the actor
and the critic (VC-PPO decouples them: lambda 1 for the critic's targets only).
"""

from __future__ import annotations

import pandas as pd

from labkit.algos.ppo import PPOTrainer
from labkit.algos.process import process_token_score
from labkit.core import masked_mean
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, resume_or_start
from labkit.experiments.prm import HELDOUT, MODEL, RL, finish
from labkit.rewards.process import answer_mask, step_correctness
from labkit.rewards.reasoning import answer_match

CLAIM = (
    "PPO for LLMs lives or dies by its critic. GAE with lambda < 1 is biased unless V is "
    "right (Schulman et al. 2016, arXiv 1506.02438), and on long chains of thought a fresh "
    "critic's initial bias and lambda's decay of the final reward make PPO collapse; "
    "pretraining the value model and lambda = 1 for the critic fix it (VC-PPO, Yuan et al. "
    "2025, arXiv 2503.01491; critic initialisation: Zheng et al. 2023, arXiv 2307.04964). On "
    "the toy: PPO with step rewards at the defaults (lambda 0.95, whitened advantages, a fresh "
    "critic) against one change at a time: lambda 1, no whitening, a critic warm-up."
)
STEP_WEIGHT = 0.25
"""r_t per right thought step: four steps, so a right thought is worth a right answer."""
WARMUP = 10
"""Critic-only rounds of the warm-up arm: 10 batches of 64, 40 minibatch updates of the head."""
FIRST = 3
"""The first steps over which the advantage diagnostics are averaged."""
DEFAULTS = "PPO, step rewards"
ARMS = {
    DEFAULTS: {"step_weight": STEP_WEIGHT},
    "PPO, step rewards, lambda 1": {"step_weight": STEP_WEIGHT, "lam": 1.0},
    "PPO, step rewards, no whitening": {"step_weight": STEP_WEIGHT, "whiten_advantages": False},
    "PPO, step rewards, critic warm-up": {"step_weight": STEP_WEIGHT, "value_warmup_steps": WARMUP},
}
"""Arm -> ``step_weight`` (step rewards on) and the PPOConfig fields it changes."""
PILOT = {"seed": 100, "steps": 3, "ppo s/step": 3.4, "warm-up round s": 3.8, "heldout 300 s": 4.9}
"""The timing pilot (module docstring)."""
ANSWER, BEFORE = "adv/answer", "adv/before answer"
CURVES = (
    ANSWER,
    BEFORE,
    "accuracy",
    "len/mean",
    "len/truncated_frac",
    "vf/explained_var",
    "rewards/step_correctness/mean",
    "held-out accuracy",
    "held-out truncated",
)


def region_advantages(completions: list[str], adv, mask) -> dict:
    """The mean advantage over the answers' tokens and over the tokens before them (``mask``:
    the loss's valid tokens, [B, T]; NaN where a region has no token).

    >>> import torch
    >>> adv = torch.tensor([[1.0, 1.0, -2.0, -2.0]])  # "ab" then an answer (none here: 0)
    >>> region_advantages(["abcd"], adv, torch.ones(1, 4))
    {'adv/answer': nan, 'adv/before answer': -0.5}
    """
    answer = answer_mask(completions, adv.shape[1], adv.device).float() * mask  # [B, T]
    before = (1 - answer) * mask  # [B, T]
    out = {}
    for key, m in ((ANSWER, answer), (BEFORE, before)):
        out[key] = float(masked_mean(adv, m)) if m.sum() > 0 else float("nan")
    return out


class CriticProbePPOTrainer(PPOTrainer):
    """PPO that logs :func:`region_advantages` of the advantages its loss uses, each step."""

    def prepare(self, r):
        super().prepare(r)
        self.regions = region_advantages(r.completions, r.advantages, r.loss_mask)
        return r

    def train_step(self):
        record = super().train_step()
        record.metrics.update(self.regions)
        return record


def trainer_class(settings: dict):
    """The arm's trainer class, its step scores bound to the class (a resumed run gets them
    again: ``resume_or_start`` passes only the reward functions and the task)."""
    weight = settings.get("step_weight")
    if weight is None:
        return CriticProbePPOTrainer
    score = staticmethod(process_token_score(weight))
    return type("StepRewardPPOTrainer", (CriticProbePPOTrainer,), {"token_score": score})


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed, then held-out after RL (``prm.finish``) and the critic's numbers."""
    config = {k: v for k, v in settings.items() if k != "step_weight"}
    if fast and "value_warmup_steps" in config:  # CI: the warm-up's path, not its length
        config["value_warmup_steps"] = min(2, config["value_warmup_steps"])
    trainer = resume_or_start(
        trainer_class(settings),
        run_name,
        steps,
        tick,
        model=MODEL,
        reward_funcs=[answer_match, step_correctness],
        reward_weights=[1.0, 0.0],
        task="scratchpad",
        seed=seed,
        max_steps=steps,
        track_kl=False,
        save_steps=max(1, steps // 3),
        num_iterations=1,
        **RL,
        **config,
    )
    out = finish(trainer, HELDOUT["fast" if fast else "full"], seed)
    out.summary.update(critic_summary(out.curves))
    return out


def critic_summary(curves: pd.DataFrame) -> dict:
    """The advantage diagnostics over the first ``FIRST`` steps and the batches' truncated
    share over the last quarter.

    >>> c = pd.DataFrame({"step": [0, 1, 2, 3, 4], ANSWER: [None, -1.0, -0.5, 0.0, 2.0],
    ...                   BEFORE: [None, 0.5, 0.5, 0.5, 0.0],
    ...                   "len/truncated_frac": [None, 0.0, 0.0, 0.0, 0.5]})
    >>> critic_summary(c)
    {'answer advantage (first steps)': -0.5, 'other advantage (first steps)': 0.5, 'batch truncated (last quarter)': 0.5}
    """
    m = curves[curves["step"] >= 1].sort_values("step")
    first, tail = m.iloc[:FIRST], m.iloc[-max(1, round(len(m) / 4)) :]
    return {
        "answer advantage (first steps)": float(first[ANSWER].mean()),
        "other advantage (first steps)": float(first[BEFORE].mean()),
        "batch truncated (last quarter)": float(tail["len/truncated_frac"].mean()),
    }


GAE = "Schulman et al. 2016 (1506.02438) sec. 3, eq. 16"
VC = "VC-PPO (Yuan et al. 2025, 2503.01491) sec. 3-4"
ACC, TRUNC = "held-out accuracy", "held-out truncated"
CLAIMS = (
    Claim(
        "lambda-1-answer",
        "with lambda 1 the answer tokens' advantage at the first steps is higher",
        f"{GAE}: with V = 0 the outcome reaches a token lambda^d times weaker; {VC}: reward "
        "signal decay",
        metric="answer advantage (first steps)",
        arm="PPO, step rewards, lambda 1",
        baseline=DEFAULTS,
        note="the whitened advantage the loss uses, mean over the answers' tokens, steps 1-3",
    ),
    Claim(
        "lambda-1",
        "PPO with step rewards ends more accurate with lambda 1 than with 0.95",
        f"{GAE} (lambda < 1 is biased unless V is right); {VC}",
        metric=ACC,
        arm="PPO, step rewards, lambda 1",
        baseline=DEFAULTS,
    ),
    Claim(
        "lambda-1-truncated",
        "... and fewer of its completions run out of tokens",
        f"{VC} (the collapse of PPO on long CoT)",
        metric=TRUNC,
        arm="PPO, step rewards, lambda 1",
        baseline=DEFAULTS,
        direction=-1,
        note="held-out share of completions cut at 64 tokens (none needs more than 53)",
    ),
    Claim(
        "warm-up",
        "PPO with step rewards ends more accurate after a critic warm-up",
        f"{VC} (value pretraining); Zheng et al. 2023 (2307.04964), critic initialisation",
        metric=ACC,
        arm="PPO, step rewards, critic warm-up",
        baseline=DEFAULTS,
    ),
    Claim(
        "warm-up-truncated",
        "... and fewer of its completions run out of tokens",
        f"{VC} (value pretraining)",
        metric=TRUNC,
        arm="PPO, step rewards, critic warm-up",
        baseline=DEFAULTS,
        direction=-1,
    ),
    Claim(
        "whitening",
        "whitening the advantages changes little",
        "Andrychowicz et al. 2021 (2006.05990): per-minibatch advantage normalisation had "
        "little effect on their tasks",
        metric=ACC,
        arm="PPO, step rewards, no whitening",
        baseline=DEFAULTS,
        direction=0,
        margin=0.1,
        note="equivalence: the held-out accuracies within 0.1 (about 3 s.e. of one run's "
        "300-prompt probe); the mechanism above says it should matter here",
    ),
)

EXPERIMENT = Experiment(
    name="ppo_critic",
    lab="95_orm_vs_prm",
    arms=ARMS,
    train=train,
    steps=20,
    fast_steps=2,
    curves=CURVES,
    claims=CLAIMS,
    live={"arms": [DEFAULTS, "PPO, step rewards, lambda 1"], "seeds": (0, 1), "steps": 20},
)
