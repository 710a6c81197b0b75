"""Adaptive KL coefficients: how beta moves with the measured KL, two rules from two papers.

PPO's adaptive KL penalty (Schulman et al. 2017, arXiv 1707.06347, sec. 4) maximises
L^KLPEN = E[rho_t A_t - beta KL(pi_old(.|s_t) || pi_theta(.|s_t))] for some epochs, measures
d = E[KL(pi_old || pi_theta)] after them, and sets the beta of the *next* policy update:

    d < d_targ / 1.5  ->  beta <- beta / 2
    d > d_targ * 1.5  ->  beta <- beta * 2            (:func:`adaptive_kl_beta`)

The LM-RLHF controller (Ziegler et al. 2019, "Fine-Tuning Language Models from Human
Preferences", arXiv 1909.08593, sec. 2.2; InstructGPT, 2203.02155, keeps the same per-token
KL to pi_ref in the reward, with a fixed beta) is a proportional one, on the KL of pi_theta to
the *reference* model (pi_ref, the SFT policy), per batch:

    e_t = clip(KL_t / KL_targ - 1, -0.2, 0.2),   beta_{t+1} = beta_t (1 + K_beta e_t)
                                                  (:func:`proportional_kl_beta`)

with K_beta = n_steps / horizon in TRL's PPOTrainer up to 0.11 (``AdaptiveKLController``,
``init_kl_coef=0.2``, ``target=6``, ``horizon=10000``; TRL 1.16 has no PPOTrainer and no KL
controller) and a constant ``k_beta`` in alpaca_farm's ``kl_controller.py``, the code whose
``self.kl_ctl.value`` seed 004 quotes in its PPO reward shaping.

Where they differ: PPO's rule is a bang-bang controller (factors 2 and 1/2, a dead band
[d_targ/1.5, 1.5 d_targ] where beta stays) on the KL of one update to pi_old, a trust region
in penalty form; Ziegler's moves beta by at most 20 % x K_beta a step (0.2 x 256/10000 ~ 0.5 %
with TRL's defaults), with no dead band, on the KL accumulated since pi_ref, a budget for the
whole run. Both are pure functions of floats; the trainer owns beta.
"""

from __future__ import annotations


def adaptive_kl_beta(beta: float, d: float, d_targ: float) -> float:
    """PPO's adaptive KL penalty coefficient for the next update (1707.06347, sec. 4):
    beta / 2 when d < d_targ / 1.5, beta * 2 when d > 1.5 d_targ, else beta.

    ``d`` is the measured mean KL(pi_old || pi_theta) after this update's epochs. The paper
    calls 1.5 and 2 heuristic choices the algorithm is not very sensitive to, and the initial
    beta unimportant because the rule quickly adjusts it.

    >>> beta = 1.0
    >>> for d in (0.001, 0.001, 0.012, 0.02, 0.04):   # d_targ = 0.01: band [0.00667, 0.015]
    ...     beta = adaptive_kl_beta(beta, d, d_targ=0.01); print(beta)
    0.5
    0.25
    0.25
    0.5
    1.0
    """
    if d_targ <= 0:
        raise ValueError(f"d_targ={d_targ}: the KL target must be > 0 (PPO's sweep: 0.003-0.03)")
    if d < d_targ / 1.5:
        return beta / 2
    if d > d_targ * 1.5:
        return beta * 2
    return beta


def proportional_kl_beta(
    beta: float,
    kl: float,
    kl_target: float,
    *,
    n_steps: int = 1,
    horizon: float = 10000,
) -> float:
    """Ziegler et al.'s adaptive KL coefficient (1909.08593, sec. 2.2; TRL <= 0.11's
    ``AdaptiveKLController``): e = clip(kl / kl_target - 1, -0.2, 0.2),
    beta <- beta (1 + e n_steps / horizon).

    ``kl`` is the measured KL(pi_theta || pi_ref) of the batch (summed over a sequence's
    tokens in TRL, whose default target is 6 nats a sequence); ``n_steps`` the samples it
    covered (TRL: the batch size). alpaca_farm writes K_beta = n_steps / horizon as one
    constant ``k_beta``: pass ``n_steps=k_beta, horizon=1``.

    >>> b = proportional_kl_beta(0.2, kl=12.0, kl_target=6.0, n_steps=256, horizon=10000)
    >>> round(b, 6)                                  # e clipped to 0.2: 0.2 (1 + 0.2 0.0256)
    0.201024
    >>> round(proportional_kl_beta(0.2, kl=5.4, kl_target=6.0, n_steps=1, horizon=1), 6)
    0.18
    """
    if kl_target <= 0 or horizon <= 0:
        raise ValueError(f"kl_target={kl_target}, horizon={horizon}: both must be > 0")
    e = min(max(kl / kl_target - 1, -0.2), 0.2)  # proportional error, clipped at 20 %
    return beta * (1 + e * n_steps / horizon)
