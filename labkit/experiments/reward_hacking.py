"""Curing reward hacking: a KL penalty, a reward-model ensemble and a bounded reward against an
over-optimised learned reward, on Gao et al.'s proxy-vs-gold curve.

Gao et al. 2022 ("Scaling Laws for Reward Model Overoptimization", arXiv 2210.10760): optimise a
learned proxy reward and measure a gold reward on the same samples as a function of the distance
d = sqrt(KL(pi || pi_init)): the proxy keeps rising, the gold rises, peaks and falls (sec. 3);
a KL penalty stops the run earlier on that curve but does not move the gold-vs-d frontier
(sec. 3.6: it acts like early stopping). Remedies: an ensemble of reward models that differ in
seed, optimising their mean or their minimum (Coste et al. 2023, arXiv 2310.02743: the
conservative min, WCO, mitigates over-optimisation, the mean less); such ensembles mitigate but
do not eliminate it, since members share their errors (Eisenstein et al. 2023, arXiv 2312.09244);
a bounded, centred reward, PAR: sigmoid(r - r_ref) against the SFT policy's own responses (Fu et
al. 2025, arXiv 2502.18770).

The toy (lab 32's RLHF on ``addition``): pi_init is the shipped ``tiny`` policy after 20 SFT steps
(lab 32's stage 1, on the run's seed); the gold reward is the task's verifier (exact answer);
the proxy is ``tiny-addition-weak-rm-0``, a Bradley-Terry reward model with the classic scalar
readout only, trained on near-miss pairs (``scripts/make_reward_model.py --readout head``): it
ranks clear errors but the policy's near misses (75 vs 74) barely above chance (its card), the RM
on which README reports GRPO hacking (held-out accuracy falling while its score rose, seed 0). So
the effect can happen: the proxy's score has directions that the verifier does not reward, and an
unconstrained optimiser finds them. Members 1 and 2 are made the same way (same pairs, steps and
readout; training seed 1, 2): the ensemble. What would falsify "over-optimised": gold that keeps
rising with the proxy (then the proxy is good enough on what the policy samples).

Arms (GRPO, 16 prompts x G = 8, lr 5e-4, mu = 2: lab 32's RL stage with G halved for time; the
proxy's score logged every step in every arm, ``rewards/proxy/mean``, at weight 0 where it is not
the reward):
  proxy            beta = 0: the hack.
  proxy + KL       beta = ``BETA`` = 0.3 (k3 in the loss): the largest of lab 78's sweep, the one
                   that held this policy measurably nearer pi_ref there; a beta that does not bind
                   would make this the proxy arm again.
  ensemble min     min of the k = 3 members (Coste et al.: worst-case optimisation, WCO).
  PAR              mean_m sigmoid(r_0(x, y) - r_0(x, y_ref_m)) on the proxy, M = 4 reference
                   completions of each prompt sampled once from pi_init (the paper finds one is
                   enough; four cost little here and steady the centre). Departure: with
                   ``scale_rewards="none"`` (Dr. GRPO's choice, lab 76): GRPO's division by each
                   group's std would undo a bound (any monotone rescaling of a group comes out of a
                   z-score the same, ties aside; lab 34's discussion saw the same division at work).
Left out for time (``EXTRA_ARMS``, built the same way): ``ensemble mean`` (Coste et al.'s mean
optimisation, which they find helps less than the min) and ``gold`` (the verifier itself as the
reward: the ceiling).
Per step (curves): the proxy score, the gold (batch accuracy, the verifier on the same
completions), ``kl/k3`` (per token, to pi_init, tracked at beta = 0 too) and d =
:func:`~labkit.core.overoptimization.kl_distance` (``sqrt KL``: per-token k3 x mean completion
tokens, the batch's mean sequence KL, square-rooted). Summaries: held-out gold accuracy (``HELDOUT``
prompts, one sample each at T = 1) of pi_init (before) and after RL; the batch gold's peak
(rolling mean over ``SMOOTH`` steps) and its fall from the peak to the last tenth; the proxy's
rise (last tenth minus step 1); d at the end; the batch gold where the run first reaches
d = ``D_MATCH`` (NaN if it never does: Gao's frontier at matched KL).

Settings were fixed before any run; the timing pilot below looked at nothing but time.
``D_MATCH`` = 0.5: lab 32's hack moves the answers of a 2-3 token completion, so the proxy arm
crosses d = 0.5 early, and a KL arm that moves at all should reach it too; a run that does not is
dropped from that claim (fewer seeds, an honest inconclusive).

Budget: 4 arms x 5 seeds x ``STEPS`` = 80 steps (``python scripts/run_experiment.py
reward_hacking --workers 2``). Pilot, for timing only (seed 100, 3 steps, full probes, one
thread, load average ~7.5 on the 2 cores from other jobs; stand-in reward models of the members'
network and readout, since the members were being trained): ensemble min 2.1, 1.5 s a step, PAR
1.3, 1.5 s (its reference completions sampled and scored as new prompts come), the first step of
a process ~12 s more (SFT, loading the members, the held-out probe). Estimate, per step: proxy ~1.0
s, proxy + KL ~1.1, ensemble min ~1.5, PAR ~1.4 under that load, about a third less uncontended:
5 seeds x (80 x 5.0 s + 4 x 5 s) ~ 2,100 s of one-thread work under the pilot's load, ~1,400 s
uncontended: 12-18 min on two workers. The reward models themselves are shipped (three of 1.8 MB
in float16, 5.2 MB with their cards and tokenizers; 330-870 s each to make on one contended
thread), not trained in a run. Their cards: held-out pair accuracy on the policy's near misses
0.507, 0.641, 0.561 and on clear errors 0.914, 0.967, 0.991 (members 0, 1, 2): the seed alone moves
a weak RM this much. Member 0, the proxy as fixed above (seed 0), is the weakest of the three
on near misses, so "the min-ensemble keeps more gold than a single member" compares the ensemble
with its weakest member; runs on members 1 and 2 alone would make the fairer baseline and do not
fit the budget.
"""

from __future__ import annotations

import copy
import functools

import pandas as pd

from labkit.algos.reward_model import load_reward_model
from labkit.algos.rm_ensemble import (
    MemberScores,
    ReferenceRewards,
    ensemble,
    member_reward,
    par_reward,
)
from labkit.algos.sft import sft
from labkit.core.overoptimization import kl_distance
from labkit.experiments.arms import grpo_run, tail_means
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, Outcome
from labkit.models.policy import load_policy
from labkit.runs.evaluate import accuracy
from labkit.tasks import get_task

CLAIM = (
    "Reward over-optimisation and its cures (Gao et al. 2022, 2210.10760; Coste et al. 2023, "
    "2310.02743; Eisenstein et al. 2023, 2312.09244; Fu et al. 2025, 2502.18770): GRPO on a "
    "weak learned reward model raises its score while the verifier's accuracy peaks and falls; a "
    "KL penalty, a min-ensemble of reward models and a bounded (PAR) reward keep more of it."
)
MEMBERS = tuple(f"tiny-addition-weak-rm-{k}" for k in range(3))
"""The weak reward models (member 0 is the proxy): same pairs, steps and readout, seeds 0-2."""
BETA = 0.3
M_REF = 4
"""PAR's reference completions per prompt."""
RL = {"prompts_per_step": 16, "num_generations": 8, "learning_rate": 5e-4, "num_iterations": 2}
SFT = {"steps": 20, "batch_size": 64, "learning_rate": 3e-4}
"""Stage 1 as lab 32 runs it: pi_init."""
HELDOUT = {"full": 300, "fast": 16}
"""Held-out prompts for the gold accuracy, one sample each at T = 1 (s.e. <= 0.029 at 300)."""
SMOOTH = 10
"""Steps in the rolling mean of the batch gold and d (128 samples a step: s.d. ~0.044 alone)."""
D_MATCH = 0.5
PROXY, GOLD, D = "rewards/proxy/mean", "accuracy", "sqrt KL"
ARMS = {
    "proxy": {"reward": "proxy"},
    "proxy + KL": {"reward": "proxy", "beta": BETA},
    "ensemble min": {"reward": "min"},
    "PAR": {"reward": "par", "scale_rewards": "none"},
}
"""Arm -> its reward (``proxy``, ``mean``, ``min``, ``par``, ``gold``) and config overrides."""
EXTRA_ARMS = {
    "ensemble mean": {"reward": "mean"},
    "gold": {"reward": "gold"},
}
"""Arms left out of the stored run for time (module docstring), built the same way: add one to
``ARMS`` in a notebook and run it in that process (``workers=1``)."""
STEPS = 80
"""GRPO steps a run (the timing pilot, module docstring)."""
CURVES = (PROXY, GOLD, "kl/k3", "len/mean", D, "reward/mean")


@functools.lru_cache(maxsize=1)
def members() -> tuple:
    """The k weak reward models, loaded once a process."""
    return tuple(load_reward_model(name) for name in MEMBERS)


@functools.lru_cache(maxsize=8)
def _pi_init(seed: int):
    policy, tok = load_policy("tiny")
    task = get_task("addition")
    pairs = [(e.prompt, e.answer) for e in task.train]
    steps, batch, lr = SFT["steps"], SFT["batch_size"], SFT["learning_rate"]
    sft(policy, tok, pairs, steps, batch_size=batch, learning_rate=lr, seed=seed, progress=False)
    return policy, tok


def pi_init(seed: int):
    """(policy, tokenizer): ``tiny`` after lab 32's SFT stage on ``seed``, a copy each call."""
    policy, tok = _pi_init(seed)
    return copy.deepcopy(policy), tok


def gold_accuracy(policy, tok, n: int, seed: int) -> float:
    """The verifier's accuracy on the first ``n`` held-out prompts, one sample each at T = 1."""
    task = get_task("addition")
    return accuracy(policy, tok, task, task.heldout[:n], temperature=1.0, seed=seed + 7)


def rewards(settings: dict, policy, tok, seed: int) -> tuple[list, list[float]]:
    """The arm's reward functions and weights: its reward at 1, the proxy logged at 0. Only
    the ensemble arms score with every member."""
    kind = settings["reward"]
    scores = MemberScores(members() if kind in ("mean", "min") else members()[:1])
    proxy = member_reward(scores, 0, "proxy")
    if kind == "proxy":
        return [proxy], [1.0]
    if kind in ("mean", "min"):
        main = ensemble(scores, kind)
    elif kind == "par":
        start = copy.deepcopy(policy).eval()  # pi_init, frozen: PAR's reference responses
        ref = ReferenceRewards(
            members()[0], start, tok, get_task("addition"), M=M_REF, seed=seed + 11
        )
        main = par_reward(scores, ref)
    elif kind == "gold":
        main = "exact_match"
    else:
        raise ValueError(f"reward={kind!r}: use proxy, mean, min, par or gold")
    return [main, proxy], [1.0, 0.0]


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed: GRPO from pi_init on the arm's reward; curves and summary."""
    policy, tok = pi_init(seed)
    n = HELDOUT["fast" if fast else "full"]
    before = gold_accuracy(policy, tok, n, seed)
    funcs, weights = rewards(settings, policy, tok, seed)
    config = {k: v for k, v in settings.items() if k != "reward"}
    trainer = grpo_run(
        policy,
        config,
        seed=seed,
        steps=steps,
        run_name=run_name,
        tick=tick,
        tokenizer=tok,
        task="addition",
        reward_funcs=funcs,
        reward_weights=weights,
        track_kl=True,
        save_steps=max(1, steps // 3),
        **RL,
    )
    m = with_distance(trainer.log.metrics)
    after = gold_accuracy(trainer.model, tok, n, seed)
    trainer.log.close()
    return Outcome(summarize(before, after, m), m)


def with_distance(metrics: pd.DataFrame) -> pd.DataFrame:
    """``metrics`` with Gao's d per step (``sqrt KL``, :func:`kl_distance` of k3 and length)."""
    d = [kl_distance(k, t) for k, t in zip(metrics["kl/k3"], metrics["len/mean"])]
    return metrics.assign(**{D: d})


def summarize(before: float, after: float, metrics: pd.DataFrame) -> dict:
    """Held-out gold before and after, the batch gold's peak and fall, the proxy's rise, d at
    the end and the gold at d = ``D_MATCH``.

    >>> m = pd.DataFrame({"step": range(1, 21), GOLD: [0.5] * 10 + [0.2] * 10,
    ...                   PROXY: [0.0] * 18 + [3.0] * 2, D: [0.1 * k for k in range(20)],
    ...                   "kl/k3": [0.0] * 20})
    >>> s = summarize(0.5, 0.3, m)
    >>> s["gold gain"], s["gold fall from peak"], s["proxy rise"], round(s["gold at d=0.5"], 3)
    (-0.2, 0.3, 3.0, 0.47)

    (d's rolling mean first reaches 0.5 at step 11, where the gold's holds nine 0.5s and a 0.2.)
    """
    gold = metrics[GOLD].rolling(SMOOTH, min_periods=1).mean()
    d = metrics[D].rolling(SMOOTH, min_periods=1).mean()
    tail = tail_means(metrics, [GOLD, PROXY, D, "kl/k3"])
    reached = d >= D_MATCH
    return {
        "gold before": before,
        "gold after": after,
        "gold gain": after - before,
        "gold peak": float(gold.max()),
        "gold fall from peak": float(gold.max()) - tail[f"{GOLD} (last 10%)"],
        "proxy rise": tail[f"{PROXY} (last 10%)"] - float(metrics[PROXY].iloc[0]),
        f"gold at d={D_MATCH:g}": float(gold[reached].iloc[0]) if reached.any() else float("nan"),
        **tail,
    }


GAO = "Gao et al. 2022, 2210.10760"
GOLD_NOTE = "Gold: held-out accuracy by the verifier (HELDOUT prompts, one sample each at T = 1)."
AT_D = f"gold at d={D_MATCH:g}"
CLAIMS = (
    Claim(
        "proxy-rises",
        "optimising the proxy raises the proxy's score",
        f"{GAO}, sec. 3 (the proxy reward increases monotonically with d)",
        metric="proxy rise",
        arm="proxy",
        note="Batch proxy score, last tenth of the steps minus step 1.",
    ),
    Claim(
        "overoptimised",
        "... while the gold reward falls from its peak",
        f"{GAO}, sec. 3, fig. 1 (gold rises then falls with d)",
        metric="gold fall from peak",
        arm="proxy",
        note=f"Batch gold, rolling mean over {SMOOTH} steps: its peak minus the last tenth.",
    ),
    Claim(
        "below-start",
        "... and ends below where it started",
        f"{GAO}, fig. 1 (at large d the gold falls below its initial value); README (lab 32)",
        metric="gold gain",
        arm="proxy",
        direction=-1,
        note=GOLD_NOTE,
    ),
    Claim(
        "kl-keeps-gold",
        "a KL penalty keeps more gold than none",
        f"{GAO}, sec. 3.6 (a KL penalty acts like early stopping: it stops short of the fall)",
        metric="gold after",
        arm="proxy + KL",
        baseline="proxy",
        note=GOLD_NOTE,
    ),
    Claim(
        "kl-same-frontier",
        "at matched KL distance the KL penalty's gold is the same as none's",
        f"{GAO}, sec. 3.6 (the KL penalty does not improve the gold-vs-d frontier)",
        metric=AT_D,
        arm="proxy + KL",
        baseline="proxy",
        direction=0,
        margin=0.05,
        note=f"Batch gold (rolling {SMOOTH}) where d first reaches {D_MATCH:g}; seeds where "
        "either run never does are dropped.",
    ),
    Claim(
        "min-keeps-gold",
        "optimising the min of an ensemble keeps more gold than a single member",
        "Coste et al. 2023, 2310.02743, sec. 5 (WCO mitigates over-optimisation under PPO)",
        metric="gold after",
        arm="ensemble min",
        baseline="proxy",
        note=GOLD_NOTE + " Members differ in training seed only (the paper's set-up); the "
        "single member is member 0, the weakest of the three on near misses (module docstring).",
    ),
    Claim(
        "min-not-cured",
        "the min-ensemble still over-optimises: its gold falls from its peak",
        "Eisenstein et al. 2023, 2312.09244 (ensembles mitigate, do not eliminate, reward "
        "hacking: members share error patterns, finetune-seed ensembles the most)",
        metric="gold fall from peak",
        arm="ensemble min",
        note=f"Batch gold, rolling mean over {SMOOTH} steps: its peak minus the last tenth.",
    ),
    Claim(
        "par-keeps-gold",
        "the bounded, centred PAR reward keeps more gold than the raw proxy",
        "Fu et al. 2025, 2502.18770, sec. 5 (PAR stays robust to reward hacking over training)",
        metric="gold after",
        arm="PAR",
        baseline="proxy",
        note=GOLD_NOTE + " Departure: PAR's arm has scale_rewards='none' (module docstring).",
    ),
    Claim(
        "par-frontier",
        "at matched KL distance PAR keeps more gold than the raw proxy",
        "Fu et al. 2025, 2502.18770 (a bounded reward removes the incentive to chase the "
        f"proxy's extremes); {GAO} (compare at equal d)",
        metric=AT_D,
        arm="PAR",
        baseline="proxy",
        note=f"Batch gold (rolling {SMOOTH}) where d first reaches {D_MATCH:g}; separates a "
        "better reward from slower steps (PAR's advantages are not rescaled).",
    ),
)

EXPERIMENT = Experiment(
    name="reward_hacking",
    lab="36_curing_reward_hacking",
    arms=ARMS,
    train=train,
    steps=STEPS,
    fast_steps=3,
    claims=CLAIMS,
    curves=CURVES,
    live={"arms": ["proxy", "ensemble min"], "seeds": (0, 1), "steps": 60},
)
"""Lab 36's experiment: arms x 5 seeds, the stored result ``labkit/results/reward_hacking``."""
