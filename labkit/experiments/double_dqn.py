"""Double DQN and the dueling head against DQN, with the overestimation measured against the
true Q* of a small MDP.

DQN's target r + gamma max_a' Q(s', a'; theta^-) takes the max over noisy estimates, and
E[max] >= max E: its values drift above the truth (van Hasselt, Guez & Silver 2016, "Deep
Reinforcement Learning with Double Q-learning", arXiv 1509.06461, fig. 3). Double DQN lets the
online network pick a' and the target network value it:
    y = r + gamma Q(s', argmax_a' Q(s', a'; theta); theta^-)          (their eq. 4)
The dueling head (Wang et al. 2016, arXiv 1511.06581, eq. 9) writes Q = V + A - mean_a A, so
every transition from s trains V(s), the value shared by all of s's actions.

The MDP (``labkit.classic.overestimation.maximization_bias``): Sutton & Barto's Example 6.7
stretched into a chain. From A, "right" ends the episode (reward 0); the 9 other actions go
"left" through B_1 ... B_4, each with 10 actions paying N(-0.1, 1). Q* and V* come from value
iteration on the mean rewards (``labkit.classic.dp``), so the bias is measured exactly:
"max-Q bias" = mean over the live states of max_a Q(s, a; theta) - V*(s).

Departures, and why: a one-hot tabular toy, not Atari (the bias is measured against the true
Q*, which Atari lacks: the paper compares with Monte Carlo returns of the final policy);
DQN's plain squared TD error (the paper uses Huber and RMSProp); the dueling streams are one
linear layer each on the shared trunk; the dueling arm keeps DQN's target (the paper's dueling
agent used Double DQN's), so each arm differs from DQN in one piece. Double DQN's theta^- is a
copy of theta 100 steps old, fitted to the same replay samples, so its errors are not
independent of theta's as the double estimator's second half is
(``labkit.classic.overestimation.max_bias``): what remains of the bias here is a finding about
that stand-in.
"""

from __future__ import annotations

import numpy as np

from labkit.classic.dp import value_iteration
from labkit.classic.dqn import DQNConfig, train_dqn
from labkit.classic.overestimation import goes_left, maximization_bias
from labkit.experiments.claims import Claim
from labkit.experiments.classic_runs import StepLog, tail_mean
from labkit.experiments.harness import Experiment, Outcome

CLAIM = (
    "Double DQN (van Hasselt, Guez & Silver 2016, arXiv 1509.06461): DQN's max over noisy "
    "estimates overestimates the action values; picking a' with the online network and valuing "
    "it with the target network removes much of the bias. Dueling (Wang et al. 2016, arXiv "
    "1511.06581): Q = V + A - mean A learns faster when many actions have similar values. "
    "Seed 002: 'Double DQN (decouple choosing from evaluating), Dueling DQN (separate V and Q)'."
)
SETUP = {"n_actions": 10, "length": 4, "mean": -0.1, "sigma": 1.0}
"""The chain MDP of ``maximization_bias``."""
GAMMA = 0.9
EVERY = {"full": 100, "fast": 50}
"""Environment steps between evaluations against Q*."""
TAIL = 0.2
"""'At the end' is the mean over the last 20 % of the evaluations (one is noisy)."""
ARMS = {"DQN": {}, "Double DQN": {"target": "double"}, "Dueling DQN": {"head": "dueling"}}
VH = "van Hasselt, Guez & Silver 2016 (arXiv 1509.06461)"
WANG = "Wang et al. 2016 (arXiv 1511.06581)"


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed: ``steps`` environment steps of DQN with the arm's options on the
    chain, evaluated against Q* every ``EVERY`` steps."""
    mdp = maximization_bias(**SETUP)
    _, Q_star, _, _ = value_iteration(mdp, GAMMA)
    cfg = DQNConfig(
        total_timesteps=steps, exploration_steps=steps // 2, gamma=GAMMA, seed=seed, **settings
    )
    log, seen = StepLog(run_name), [0]

    def callback(step: int, st: dict) -> None:
        recent = st["returns"][seen[0] :] or [np.nan]  # episodes ended since the last row
        seen[0] = len(st["returns"])
        log(
            {
                "step": step,
                "max-Q bias": st["max_q_bias"][-1],
                "|Q - Q*|": st["q_error"][-1],
                "goes left": float(goes_left(st["Q"][-1])),
                "return": float(np.mean(recent)),
            }
        )
        tick(step, steps)

    train_dqn(mdp, cfg, Q_star=Q_star, callback=callback, every=EVERY["fast" if fast else "full"])
    return Outcome(summary(log.frame()), log.frame())


def summary(m) -> dict:
    """The end-of-run means (last 20 % of the evaluations) and the means over the whole run
    (the area under a curve: how fast it fell)."""
    end = f"(last {TAIL:.0%})"
    return {
        f"max-Q bias {end}": tail_mean(m, "max-Q bias", TAIL),
        "max-Q bias (mean)": float(m["max-Q bias"].mean()),
        f"|Q - Q*| {end}": tail_mean(m, "|Q - Q*|", TAIL),
        "|Q - Q*| (mean)": float(m["|Q - Q*|"].mean()),
        f"goes left {end}": tail_mean(m, "goes left", TAIL),
        f"return {end}": tail_mean(m, "return", TAIL),
    }


EXPERIMENT = Experiment(
    name="double_dqn",
    lab="23_double_dueling_dqn",
    arms=ARMS,
    train=train,
    steps=3000,
    fast_steps=300,
    seeds=tuple(range(10)),
    curves=("max-Q bias", "|Q - Q*|", "goes left", "return"),
    claims=(
        Claim(
            "dqn-overestimates",
            "DQN's max_a Q(s, a) overestimates V*(s) where rewards are noisy",
            f"{VH}, sec. 3 and fig. 3; Sutton & Barto 2018, Example 6.7",
            metric="max-Q bias (last 20%)",
            arm="DQN",
        ),
        Claim(
            "double-less-bias",
            "Double DQN overestimates less than DQN",
            f"{VH}, fig. 3",
            metric="max-Q bias (last 20%)",
            arm="Double DQN",
            baseline="DQN",
            direction=-1,
        ),
        Claim(
            "double-goes-left-less",
            "Double DQN takes the worse branch (left at A) less often than DQN",
            "Sutton & Barto 2018, fig. 6.5",
            metric="goes left (last 20%)",
            arm="Double DQN",
            baseline="DQN",
            direction=-1,
            note="The book's figure is tabular Q-learning vs Double Q-learning; here DQN vs "
            "Double DQN, greedy action in A over the last 20 % of the evaluations.",
        ),
        Claim(
            "dueling-faster",
            "the dueling head learns Q faster when many actions have similar values",
            f"{WANG}, sec. 4.1, fig. 3",
            metric="|Q - Q*| (mean)",
            arm="Dueling DQN",
            baseline="DQN",
            direction=-1,
            note="The paper's corridor is policy evaluation (SARSA) with 5, 10 and 20 actions; "
            "here DQN control on the chain, whose B states have 10 actions of equal value. "
            "'Faster' is the mean error over the run (the area under the curve).",
        ),
    ),
    live={"arms": list(ARMS), "seeds": (0, 1, 2), "steps": 3000},
)
