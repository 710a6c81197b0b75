"""A reference policy that moves: TR-DPO's refresh of pi_ref, as TRL's ``sync_ref_model`` does it.

Gorbatovski et al. 2024 ("Learn Your Reference Model for Real Good Alignment", arXiv 2404.09656,
sec. 3) update pi_ref during training instead of keeping the starting policy. TRL's three fields
(``sync_ref_model``, ``ref_model_mixup_alpha`` = alpha, ``ref_model_sync_steps`` = tau; seed 003
walks through them) do it as one rule: after every tau-th optimizer step, each parameter of pi_ref
becomes

    theta_ref <- alpha theta + (1 - alpha) theta_ref

alpha = 1 is the paper's hard update (pi_ref := pi_theta every tau steps), alpha < 1 its soft
update (TRL's default: alpha = 0.6, tau = 512). The mix is of *parameters*: TRL's help text writes
``pi_ref = alpha * pi_theta + (1 - alpha) * pi_ref_prev``, but what it computes is the
parameter average, and the policy of averaged weights is not the average of the two policies.
Only parameters are mixed (TRL's ``SyncRefModelCallback._sync_target_model``); buffers stay.
"""

from __future__ import annotations

import torch


def refresh_reference(ref: torch.nn.Module, policy: torch.nn.Module, alpha: float) -> None:
    """theta_ref <- alpha theta + (1 - alpha) theta_ref for every parameter, in place.

    TR-DPO (2404.09656) sec. 3: alpha = 1 is the hard update, 0 < alpha < 1 the soft one. The
    operations are TRL's (``mul_(1 - alpha)`` then ``add_(theta, alpha=alpha)``), so the result
    is TRL's to the bit; ``policy``'s parameters are cast to ``ref``'s dtype and device first.

    >>> ref, pi = torch.nn.Linear(1, 1, bias=False), torch.nn.Linear(1, 1, bias=False)
    >>> _ = ref.weight.data.fill_(1.0), pi.weight.data.fill_(3.0)
    >>> refresh_reference(ref, pi, 0.25); ref.weight.item()  # 0.25 * 3 + 0.75 * 1
    1.5
    >>> refresh_reference(ref, pi, 1.0); ref.weight.item()  # hard: pi_ref := pi_theta
    3.0
    """
    if not 0 < alpha <= 1:
        raise ValueError(f"alpha={alpha}: use 0 < alpha <= 1 (1: a hard update)")
    pairs = list(zip(ref.parameters(), policy.parameters(), strict=True))
    for p_ref, p in pairs:
        if p_ref.shape != p.shape:
            raise ValueError(
                f"pi_ref and pi_theta differ in shape ({tuple(p_ref.shape)} vs "
                f"{tuple(p.shape)}): the reference must be a copy of the policy"
            )
    with torch.no_grad():  # in place, on leaves that may require grad
        for p_ref, p in pairs:  # theta_ref <- (1 - alpha) theta_ref + alpha theta
            p_ref.mul_(1.0 - alpha).add_(p.to(p_ref), alpha=alpha)


def refresh_due(step: int, every: int) -> bool:
    """True after the optimizer step numbered ``step`` (1-based) when pi_ref is refreshed:
    every ``every``-th step, as TRL's callback checks ``global_step % ref_model_sync_steps == 0``
    at ``on_step_end``.

    >>> [s for s in range(1, 11) if refresh_due(s, 4)]
    [4, 8]
    """
    return step > 0 and step % every == 0
