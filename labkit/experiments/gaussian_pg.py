"""A Gaussian policy on a continuous-control task with a known optimum: REINFORCE without and
with a learned baseline, and actor-critic with GAE.

The task (``labkit.classic.continuous``): steer a point on a line to 0, x_{t+1} = x_t + a_t,
r_t = -(x_{t+1}^2 + 0.1 a_t^2), 20 steps from x_0 ~ U[-1, 1]; its optimal return J* comes from
the Riccati recursion. The policy (``labkit.classic.gaussian``): a ~ N(mu_theta(x_t, t/T),
sigma^2), mu a small tanh network, log sigma learned. Each update: 16 episodes, then
    grad J ~ 1/B sum_b sum_t grad log pi(a_t|s_t) A_t
with A_t = G_t (REINFORCE, Williams 1992), G_t - V_phi(s_t) (a learned baseline; Sutton &
Barto 2018, sec. 13.4) or GAE(gamma = 1, lambda = 0.95) on V_phi (Schulman et al. 2016, arXiv
1506.02438). The score is deterministic: the mean action mu(s) run from 101 fixed start points.

Departures, and why: a 1-D toy instead of MuJoCo or Pendulum (its optimum is known in closed
form and a run takes seconds on a CPU); one update per batch, no advantage normalisation (the
textbook estimator, so the baseline's effect is not hidden by whitening).
"""

from __future__ import annotations

from labkit.classic.continuous import GaussianPGConfig, train_gaussian_pg
from labkit.experiments.claims import Claim
from labkit.experiments.classic_runs import StepLog, tail_mean
from labkit.experiments.harness import Experiment, Outcome

CLAIM = (
    "A Gaussian policy N(mu_theta(s), sigma^2) makes the policy gradient work for continuous "
    "actions (seed 002: 'continuous actions: output mu, sigma -> Gaussian'; Williams 1992). A "
    "learned baseline lowers the gradient's variance without biasing it and learns faster "
    "(Sutton & Barto 2018, sec. 13.4, fig. 13.2); GAE with lambda < 1 trades a little bias for "
    "less variance still (Schulman et al. 2016, arXiv 1506.02438)."
)
ARMS = {
    "REINFORCE": {"advantage": "reward_to_go"},
    "REINFORCE + baseline": {"advantage": "baseline"},
    "actor-critic (GAE)": {"advantage": "gae"},
}
TAIL = 0.1
SB = "Sutton & Barto 2018, sec. 13.4, fig. 13.2"


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed: ``steps`` policy updates of 16 episodes each."""
    cfg = GaussianPGConfig(iterations=steps, seed=seed, **settings)
    log = StepLog(run_name)

    def callback(it: int, st: dict) -> None:
        log(
            {
                "step": it,
                "return": st["return"][-1],
                "return (mean policy)": st["eval_return"][-1],
                "sigma": st["sigma"][-1],
                "critic loss": st["critic_loss"][-1],
            }
        )
        tick(it, steps)

    _, stats = train_gaussian_pg(cfg, callback)
    return Outcome(summary(log.frame(), stats["optimal_return"]), log.frame())


def summary(m, optimal: float) -> dict:
    """The mean policy's return at the end (last 10 % of updates), over the run (how fast), its
    gain over the first update, the gap to J*, and sigma at the end."""
    end = tail_mean(m, "return (mean policy)", TAIL)
    return {
        "return (mean policy, last 10%)": end,
        "return (mean policy, mean)": float(m["return (mean policy)"].mean()),
        "return gain": end - float(m["return (mean policy)"].iloc[0]),
        "gap to optimum (last 10%)": optimal - end,
        "sigma (last 10%)": tail_mean(m, "sigma", TAIL),
        "optimal return": optimal,
    }


EXPERIMENT = Experiment(
    name="gaussian_pg",
    lab="24_gaussian_policy",
    arms=ARMS,
    train=train,
    steps=200,
    fast_steps=5,
    seeds=tuple(range(10)),
    curves=("return", "return (mean policy)", "sigma", "critic loss"),
    claims=(
        Claim(
            "improves",
            "REINFORCE with a baseline improves a Gaussian policy's return",
            "Williams 1992 (Machine Learning 8, sec. 6, Gaussian units); seed 002",
            metric="return gain",
            arm="REINFORCE + baseline",
        ),
        Claim(
            "baseline-faster",
            "a learned baseline learns faster than plain REINFORCE",
            SB,
            metric="return (mean policy, mean)",
            arm="REINFORCE + baseline",
            baseline="REINFORCE",
            note="'Faster' is the mean policy's return averaged over the run (the area under "
            "the curve); REINFORCE here already uses the reward-to-go G_t.",
        ),
        Claim(
            "gae-faster",
            "GAE (lambda = 0.95) learns faster than the Monte Carlo baseline",
            "Schulman et al. 2016 (arXiv 1506.02438), sec. 6",
            metric="return (mean policy, mean)",
            arm="actor-critic (GAE)",
            baseline="REINFORCE + baseline",
            note="The paper finds intermediate lambda (about 0.9 to 0.99) best on cart-pole and "
            "3-D locomotion, against lambda = 1; here one value, 0.95, on a 20-step toy.",
        ),
    ),
    live={"arms": list(ARMS), "seeds": (0, 1, 2), "steps": 200},
)
