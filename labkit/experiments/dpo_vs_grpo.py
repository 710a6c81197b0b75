"""DPO against GRPO on one verifiable budget: offline DPO, online DPO and GRPO on equal samples.

One exact verifier, one cold start, the same number of samples drawn and of optimizer steps in
every arm; what differs is whose samples the update learns from and how:
  GRPO           each step, 16 prompts x G = 4 completions of the current policy; reward = the
                 verifier (``exact_match``, 0/1); group z-score advantages; one update (mu = 1).
  online DPO     each step, 32 prompts x 2 completions of the current policy; a prompt whose two
                 completions the verifier splits makes a pair (correct chosen over incorrect);
                 one DPO step on the step's pairs (:class:`~labkit.algos.online_dpo.OnlineDPOTrainer`,
                 TRL's ``OnlineDPOTrainer`` with a verifier as judge: OAIF, Guo et al. 2024).
  offline DPO    steps x 32 prompts x 2 completions of the cold start, drawn once before
                 training; the same pairing rule (:func:`~labkit.algos.pairs.rollout_pairs`,
                 G = 2); DPO for as many steps, each pair seen once on average (batch = pairs /
                 steps); ``4 epochs``: the same pairs, four times the batch.
So each arm draws 64 samples a step (``samples drawn``, counted in every run), offline all of
them before its first step; each takes one optimizer step per training step.

Why the toy lets the effects happen: the tiny policy's cold start on 2-digit addition answers a
sampled prompt right about a third of the time, so two thirds of its prompts make pairs early
and its errors are its own (a units digit, off by one), the low edit distance at which Pal et al.
2024 find DPO lowering the chosen completion's log-prob. As the policy learns, the cold start's
errors stop being the ones it makes: the offline pairs then describe a policy it no longer is
(the distribution shift Guo et al. and Tang et al. blame), while online pairs follow it. A
falsification: offline DPO ending as accurate as online DPO (the pairs' origin would not matter
here), or GRPO not beating offline DPO.

Settings, fixed before any run (the pilot below measured time only):
  task, model   ``addition`` from ``tiny``: a step costs ~0.2 s (the graded task ~2 s), the
                verifier is exact, and labs 31/35 use the same cold start for DPO.
  GRPO          lr 5e-4 with labkit's linear decay, the labs' base run's (``BASE_RUN``, chosen
                by its sweep); beta = 0 (TRL's default) with pi_ref kept to log KL; mu = 1.
  DPO (both)    beta = 0.1 (TRL's default, DPO and online DPO); lr 3e-5 constant, labkit's
                ``DPOConfig`` default (its note: the tiny policy collapses under DPO from 5e-5);
                the loss is the sigmoid one (TRL's default).
Summaries: held-out accuracy (one sample at T = 1 on each of 300 held-out prompts; s.e. <= 0.029)
and the k3 KL of the final policy to the cold start on those samples; the last tenth of the
run's sample accuracy, ``kl/k3`` (sampler vs cold start, per token: GRPO and online DPO), DPO's
implicit rewards beta log(pi / pi_ref) of chosen and rejected, and their log-probs.

Budget: 300 steps, 5 seeds x 4 arms (``python scripts/run_experiment.py dpo_vs_grpo --workers 2``).
Pilot, for timing only (seed 100, 3 steps, full probes, one thread, load average ~3.5 on the 2
cores from other jobs; its accuracies were not looked at): GRPO 0.36, 0.33, 0.24 s a step,
online DPO 0.36, 0.29, 0.29; a run's set-up and held-out probes ~2.8 s; offline DPO's pairs for
300 steps (19,200 cold-start samples, 3,909 pairs) 18 s, its steps ~0.1 s (4 epochs ~0.15). A
seed: 300 x (0.3 + 0.3 + 0.1 + 0.15) + 2 x 18 + 4 x 3 ~ 300 s; five seeds ~1,500 s of one-thread
work, about 13 min on two workers (more with this machine's step-time noise).
"""

from __future__ import annotations

import random

import pandas as pd

from labkit.algos.dpo import DPOTrainer
from labkit.algos.online_dpo import OnlineDPOTrainer
from labkit.algos.pairs import rollout_pairs
from labkit.experiments.arms import grpo_run, heldout_accuracy, tail_means
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, Outcome, resume_or_start
from labkit.experiments.ref_refresh import heldout_kl_to_start
from labkit.models.policy import load_policy
from labkit.tasks import get_task
from labkit.tasks.base import max_completion_tokens

CLAIM = (
    "On equal samples from one verifier, learning from the current policy's own samples beats "
    "learning from the cold start's: online DPO (OAIF, Guo et al. 2024, arXiv 2402.04792) beats "
    "offline DPO, as online RLHF beats offline alignment (Tang et al. 2024, arXiv 2405.08448), "
    "and GRPO, an online RL method, beats offline DPO (Xu et al. 2024, arXiv 2404.10719; "
    "DeepSeekMath, arXiv 2402.03300, sec. 5.2.2). Offline DPO on low-edit-distance pairs lowers "
    "the chosen completions' log-probs (Pal et al. 2024, arXiv 2402.13228)."
)
MODEL, TASK = "tiny", "addition"
PER_STEP = 64
"""Samples drawn a step in every arm (offline: before training, steps x this many)."""
GRPO = {
    "reward_funcs": ["exact_match"],
    "prompts_per_step": 16,
    "num_generations": 4,
    "num_iterations": 1,
    "learning_rate": 5e-4,
    "beta": 0.0,
}
PAIR_PROMPTS = PER_STEP // 2
"""Prompts a step of the DPO arms: two completions each."""
DPO = {"beta": 0.1, "learning_rate": 3e-5}
"""Both DPO arms (constant schedule: the configs' default)."""
ONLINE, OFFLINE, OFFLINE4 = "online DPO", "offline DPO", "offline DPO, 4 epochs"
ARMS = {
    "GRPO": {"algo": "grpo"},
    ONLINE: {"algo": "online"},
    OFFLINE: {"algo": "offline", "epochs": 1},
    OFFLINE4: {"algo": "offline", "epochs": 4},
}
"""Arm -> its algorithm (and, offline, the passes over its pairs in the run)."""
HELDOUT = {"full": 300, "fast": 16}
"""Held-out prompts per run: one sample each at temperature 1."""
PILOT = {"seed": 100, "steps": 3, "grpo s/step": 0.3, "online s/step": 0.3, "pairs s": 18}
"""The timing pilot (module docstring): seconds a step at one thread on a loaded machine, and
offline DPO's pair building for a 300-step run."""
ACC, KL0, DRAWN = "held-out accuracy", "KL to pi_0 (held-out)", "samples drawn"
TAIL = (
    "accuracy",
    "kl/k3",
    "rewards/chosen",
    "rewards/rejected",
    "logps/chosen",
    "logps/rejected",
    "pairs/frac",
)
"""Training-log columns summarised over the last 10 % of the steps (where an arm has them)."""
CURVES = (*TAIL, "reward/mean", "rewards/margins", "loss", "samples/drawn")


def samples_drawn(algo: str, step: int, steps: int) -> int:
    """The samples an arm has drawn by the end of ``step`` (0 = before the first) of a
    ``steps``-step run: the online arms ``PER_STEP`` a step, offline all of them up front.

    >>> samples_drawn("grpo", 10, 300), samples_drawn("offline", 0, 300)
    (640, 19200)
    """
    if algo not in ("grpo", "online", "offline"):
        raise ValueError(f"algo={algo!r}: use 'grpo', 'online' or 'offline'")
    return PER_STEP * (steps if algo == "offline" else step)


def offline_batch(pairs: int, steps: int, epochs: int = 1) -> int:
    """Pairs a step so that ``steps`` steps pass over ``pairs`` pairs ``epochs`` times (at least
    one; DPOTrainer draws with replacement, so "once" is on average).

    >>> offline_batch(130, 10), offline_batch(130, 10, epochs=4), offline_batch(3, 10)
    (13, 52, 1)
    """
    return max(1, round(epochs * pairs / steps))


def drawn_column(metrics: pd.DataFrame, per_step: dict[int, int]) -> pd.DataFrame:
    """``metrics`` with ``samples/drawn``: the cumulative count of ``per_step`` (step ->
    samples drawn in it; a step missing drew none).

    >>> m = pd.DataFrame({"step": [1, 2, 3]})
    >>> drawn_column(m, {1: 64, 2: 64, 3: 64})["samples/drawn"].tolist()
    [64, 128, 192]
    >>> drawn_column(m, {1: 19200})["samples/drawn"].tolist()
    [19200, 19200, 19200]
    """
    counts = metrics["step"].map(lambda s: per_step.get(int(s), 0))
    return metrics.assign(**{"samples/drawn": counts.cumsum().astype(int)})


def offline_pairs(steps: int, seed: int) -> tuple[list[dict], int]:
    """(pairs, samples drawn): ``steps`` x ``PAIR_PROMPTS`` training prompts drawn with the
    run's seed, two completions of the cold start each, correct chosen over incorrect."""
    model, tok = load_policy(MODEL)
    task = get_task(TASK)
    prompts = task.sample_prompts(steps * PAIR_PROMPTS, random.Random(seed))
    pairs = rollout_pairs(model, tok, task, prompts, num_generations=2, seed=seed)
    return pairs, 2 * len(prompts)


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed from the cold start, then the held-out probes."""
    algo, common = settings["algo"], {"seed": seed, "save_steps": max(1, steps // 3)}
    if algo == "grpo":
        trainer = grpo_run(MODEL, {}, steps=steps, run_name=run_name, tick=tick, **GRPO, **common)
    elif algo == "online":
        trainer = resume_or_start(
            OnlineDPOTrainer,
            run_name,
            steps,
            tick,
            model=MODEL,
            reward_funcs=["exact_match"],
            max_steps=steps,
            prompts_per_step=PAIR_PROMPTS,
            **DPO,
            **common,
        )
    else:
        pairs, drawn = offline_pairs(steps, seed)
        batch = offline_batch(len(pairs), steps, settings["epochs"])
        trainer = resume_or_start(
            DPOTrainer,
            run_name,
            steps,
            tick,
            model=MODEL,
            pairs=pairs,
            max_steps=steps,
            batch_size=batch,
            **DPO,
            **common,
        )
    m = trainer.log.metrics
    if algo == "offline":
        m = drawn_column(m, {1: drawn})
    elif algo == "grpo":
        m = drawn_column(m, trainer.log.samples.groupby("step").size().to_dict())
    n = HELDOUT["fast" if fast else "full"]
    summary = {
        ACC: heldout_accuracy(trainer, n, max_completion_tokens(trainer.task), seed=seed),
        KL0: heldout_kl_to_start(trainer, n, seed),
        DRAWN: int(m["samples/drawn"].iloc[-1]),
        **tail_means(m, TAIL),
    }
    trainer.log.close()
    return Outcome(summary, m)


XU = "Xu et al. 2024, Is DPO Superior to PPO for LLM Alignment? (arXiv 2404.10719), abstract"
GUO = "Guo et al. 2024, OAIF (arXiv 2402.04792), abstract"
TANG = "Tang et al. 2024 (arXiv 2405.08448), abstract"
ACC_NOTE = (
    "The papers' quality measures are human or model-judged win rates; here held-out accuracy "
    "of one sample at T = 1 (300 prompts)."
)
CLAIMS = (
    Claim(
        "online-beats-offline",
        "online DPO ends more accurate than offline DPO on the same number of samples",
        f"{GUO} (OAIF beats offline DAP methods); {TANG} (online beats offline; the gap is "
        "not explained by data coverage or quality alone)",
        metric=ACC,
        arm=ONLINE,
        baseline=OFFLINE,
        note=ACC_NOTE,
    ),
    Claim(
        "online-beats-epochs",
        "... and than offline DPO given four passes over its pairs",
        f"{TANG} (the gap comes from on-policy sampling, not from the offline data alone)",
        metric=ACC,
        arm=ONLINE,
        baseline=OFFLINE4,
        note="More epochs is not one of the paper's ablations: more optimisation of the same "
        "offline samples, at four times the DPO compute.",
    ),
    Claim(
        "grpo-beats-offline",
        "GRPO ends more accurate than offline DPO on the same number of samples",
        f"{XU} (PPO beats DPO; DPO suffers from the shift between its data and the policy's "
        "outputs); DeepSeekMath (arXiv 2402.03300) sec. 5.2.2, fig. 5 (online sampling beats "
        "offline on equal data)",
        metric=ACC,
        arm="GRPO",
        baseline=OFFLINE,
        note=ACC_NOTE + " GRPO stands in for PPO (the paper's online RL method).",
    ),
    Claim(
        "grpo-vs-online",
        "GRPO and online DPO end about equally accurate (within 0.05)",
        f"the sources disagree: {GUO} (OAIF also beats RLHF with a reward model and PPO) "
        f"against {XU} (PPO beats the other alignment methods tested): so an equivalence, "
        "two-sided",
        metric=ACC,
        arm="GRPO",
        baseline=ONLINE,
        direction=0,
        margin=0.05,
        note="0.05 is about two standard errors of one run's 300-prompt probe.",
    ),
    Claim(
        "chosen-falls",
        "offline DPO lowers the chosen completions' log-probs below the cold start's",
        "Pal et al. 2024, Smaug / DPO-Positive (arXiv 2402.13228), abstract (DPO can reduce "
        "the likelihood of the preferred examples, especially at low edit distance)",
        metric="rewards/chosen (last 10%)",
        arm=OFFLINE,
        direction=-1,
        note="beta log(pi / pi_ref) of the chosen completions of the pairs drawn in the last "
        "tenth of the steps: < 0 is log pi(y_w) below the cold start's. The pairs differ by a "
        "digit or two.",
    ),
    Claim(
        "offline-drifts",
        "offline DPO ends further from the cold start than GRPO (KL on its own samples)",
        f"{XU}, DPO's limitation: it can put probability on responses its data does not cover",
        metric=KL0,
        arm=OFFLINE,
        baseline="GRPO",
        note="k3 KL to the cold start per token on the final policy's held-out samples; the "
        "paper argues DPO may favour out-of-distribution responses, here seen as drift.",
    ),
)

EXPERIMENT = Experiment(
    name="dpo_vs_grpo",
    lab="37_dpo_vs_grpo",
    arms=ARMS,
    train=train,
    steps=300,
    fast_steps=4,
    claims=CLAIMS,
    curves=CURVES,
    live={"arms": ["GRPO", ONLINE, OFFLINE], "seeds": (0, 1), "steps": 60},
)
