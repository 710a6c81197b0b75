"""Three cures for an over-optimised learned reward, and the distance Gao et al. plot it over.

- :func:`ensemble_reward`: k reward models' scores combined, the mean or the worst case (min):
  Coste et al. 2023, "Reward Model Ensembles Help Mitigate Overoptimization" (arXiv 2310.02743,
  sec. 3: mean optimisation and worst-case optimisation, WCO); members differ in seed only.
- :func:`preference_as_reward`: PAR, Fu et al. 2025, "Reward Shaping to Mitigate Reward Hacking
  in RLHF" (arXiv 2502.18770): r_RL(x, y) = (1/M) sum_m sigmoid(r(x, y) - r(x, y_ref_m)), the
  reward model's own Bradley-Terry probability that y beats M reference responses of the SFT
  policy to the same prompt: bounded in (0, 1), centred on the reference reward, steep near it
  and flat far above it (the authors' code: ``RewardShaper._shape_par``).
- :func:`kl_distance`: d = sqrt(KL(pi || pi_init)), the x-axis of Gao et al. 2022, "Scaling Laws
  for Reward Model Overoptimization" (arXiv 2210.10760, sec. 2), KL of whole sequences (nats).
"""

from __future__ import annotations

import math

import torch

from labkit.core.options import choose

ENSEMBLE_MODES = ("mean", "min")


def ensemble_reward(scores: torch.Tensor, how: str = "min") -> torch.Tensor:
    """Combine k members' scores [k, B] into one reward [B]: ``"mean"`` (mean optimisation) or
    ``"min"`` (worst-case optimisation, WCO): Coste et al. 2023 (2310.02743), eqs. for mean
    and WCO. The min rewards a completion only as far as every member agrees it is good.

    >>> ensemble_reward(torch.tensor([[1.0, 4.0], [3.0, 0.0]]), "min")
    tensor([1., 0.])
    >>> ensemble_reward(torch.tensor([[1.0, 4.0], [3.0, 0.0]]), "mean")
    tensor([2., 2.])
    """
    choose("how", how, ENSEMBLE_MODES)
    return scores.min(0).values if how == "min" else scores.mean(0)  # [B]


def preference_as_reward(r: torch.Tensor, r_ref: torch.Tensor) -> torch.Tensor:
    """PAR (Fu et al. 2025, 2502.18770): (1/M) sum_m sigmoid(r_i - r_ref[i, m]) for rewards
    r [B] and the rewards of M reference responses to the same prompts r_ref [B, M].

    >>> preference_as_reward(torch.tensor([0.0, 2.0]), torch.tensor([[0.0, 0.0], [2.0, 4.0]]))
    tensor([0.5000, 0.3096])
    """
    return torch.sigmoid(r[:, None] - r_ref).mean(1)  # [B]


def kl_distance(kl_per_token: float, tokens: float) -> float:
    """Gao et al.'s d = sqrt(KL(pi || pi_init)) of whole completions, from a per-token KL
    estimate averaged over a batch's completion tokens and the mean completion length in
    tokens: their product is the batch's mean sequence KL (token mean x tokens per completion).
    A negative estimate (sampling noise of an unbiased estimator near 0) counts as 0.

    >>> kl_distance(0.02, 8.0)
    0.4
    >>> kl_distance(-0.001, 8.0)
    0.0
    """
    return math.sqrt(max(0.0, kl_per_token * tokens))
