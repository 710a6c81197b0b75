"""Preference losses: DPO (sigmoid, IPO) and the Bradley-Terry reward-model loss.

Shapes: B preference pairs; every input is one number per sequence ([B]): a summed sequence
log-prob (DPO) or a scalar reward-model score (Bradley-Terry). fp16/bf16 inputs are computed in
float32, float64 stays float64 (stats included).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from labkit.core.numerics import float_dtype
from labkit.core.options import DPO_LOSS_TYPES, choose


def dpo_loss(
    chosen_logp: torch.Tensor,
    rejected_logp: torch.Tensor,
    ref_chosen_logp: torch.Tensor,
    ref_rejected_logp: torch.Tensor,
    beta: float,
    loss_type: str = "sigmoid",
) -> tuple[torch.Tensor, dict]:
    """DPO: h = (log pi(y_w) - log pi_ref(y_w)) - (log pi(y_l) - log pi_ref(y_l)),

    sigmoid: L = -log sigma(beta h)          (Rafailov et al. 2023, 2305.18290, eq. 7)
    ipo:     L = (h - 1 / (2 beta))^2        (Azar et al. 2023, 2310.12036, eq. 17)
    averaged over the B pairs. The implicit reward of a response is beta log(pi / pi_ref)
    (the optimal policy of the KL-regularised objective is pi_ref exp(r / beta) / Z).
    TRL feeds IPO token-averaged log-probs (sum / length); pass those for IPO to match it.

    Returns (loss, stats) with detached 0-d ``rewards/chosen``, ``rewards/rejected`` (means of
    the implicit rewards), ``rewards/margins`` (mean beta h), ``rewards/accuracies`` (fraction of
    pairs with chosen reward > rejected reward), ``loss`` (TRL's DPOTrainer metric names).

    >>> z = torch.zeros(2)
    >>> loss, st = dpo_loss(z, z, z, z, beta=0.1)  # equal log-ratios: ln 2
    >>> loss, st["rewards/accuracies"]
    (tensor(0.6931), tensor(0.))
    """
    choose("loss_type", loss_type, DPO_LOSS_TYPES)
    dtype = float_dtype(chosen_logp, rejected_logp, ref_chosen_logp, ref_rejected_logp)
    chosen_logp, rejected_logp, ref_chosen_logp, ref_rejected_logp = (
        x.to(dtype) for x in (chosen_logp, rejected_logp, ref_chosen_logp, ref_rejected_logp)
    )
    chosen_r = beta * (chosen_logp - ref_chosen_logp)  # [B] implicit rewards
    rejected_r = beta * (rejected_logp - ref_rejected_logp)  # [B]
    h = (chosen_logp - ref_chosen_logp) - (rejected_logp - ref_rejected_logp)  # [B]
    if loss_type == "sigmoid":  # DPO (2305.18290)
        losses = -F.logsigmoid(beta * h)  # [B]; logsigmoid is stable for any h
    else:  # IPO (2310.12036)
        losses = (h - 1 / (2 * beta)) ** 2  # [B]
    loss = losses.mean()
    stats = {
        "rewards/chosen": chosen_r.mean(),
        "rewards/rejected": rejected_r.mean(),
        "rewards/margins": (chosen_r - rejected_r).mean(),
        "rewards/accuracies": (chosen_r > rejected_r).to(dtype).mean(),
        "loss": loss,
    }
    return loss, {k: v.detach() for k, v in stats.items()}


def bradley_terry_loss(
    chosen_scores: torch.Tensor, rejected_scores: torch.Tensor, margin: torch.Tensor | None = None
) -> tuple[torch.Tensor, dict]:
    """Reward-model loss L = -log sigma(r(x, y_w) - r(x, y_l) - m), averaged over pairs.

    P(y_w > y_l) = sigma(r_w - r_l) is the Bradley-Terry model (1952); InstructGPT (2203.02155)
    eq. 1; TRL's RewardTrainer (optional per-pair ``margin`` m, Llama 2). scores: [B].
    stats: ``accuracy`` (fraction with r_w > r_l), ``margin`` (mean r_w - r_l), ``loss``.

    >>> loss, st = bradley_terry_loss(torch.tensor([2.0, 0.0]), torch.tensor([0.0, 0.0]))
    >>> loss, st["accuracy"]  # (-log sigma(2) + ln 2) / 2
    (tensor(0.4100), tensor(0.5000))
    """
    dtype = float_dtype(chosen_scores, rejected_scores, margin)
    diff = chosen_scores.to(dtype) - rejected_scores.to(dtype)  # [B]
    m = (
        0.0 if margin is None else torch.as_tensor(margin, dtype=dtype, device=diff.device)
    )  # [B] or a number
    losses = -F.logsigmoid(diff - m)  # [B]
    loss = losses.mean()
    stats = {"accuracy": (diff > 0).to(dtype).mean(), "margin": diff.mean(), "loss": loss}
    return loss, {k: v.detach() for k, v in stats.items()}
