"""The trainer's side of TR-DPO's reference refresh (``sync_ref_model``; the rule itself is
:func:`labkit.models.reference.refresh_reference`).

:class:`ReferenceSync` is the component a :class:`~labkit.algos.base.Trainer` holds
(``trainer.ref_sync``): after each step it refreshes pi_ref when the step's number is a multiple
of ``ref_model_sync_steps`` (TRL's ``SyncRefModelCallback.on_step_end``), counts the refreshes,
keeps pi_0 when asked (the KL to the policy the run started from stays measurable once pi_ref
has left it), and puts pi_ref into the checkpoint once it is no longer the starting policy, which
a resumed run could not rebuild from the model's name. :func:`check_ref_sync` refuses the
refresh where there is no pi_ref of its own: a LoRA policy takes pi_ref from its adapter switched
off (as in TRL, which refuses PEFT models here too), and a GRPO run with beta = 0 and
``track_kl=False`` keeps none.
"""

from __future__ import annotations

import torch

from labkit.models.policy import frozen_copy, is_peft
from labkit.models.reference import refresh_due, refresh_reference


def check_ref_sync(config, ref_model: torch.nn.Module | None, model: torch.nn.Module) -> None:
    """Raise ValueError when ``config`` asks for ``sync_ref_model`` and ``ref_model`` is None."""
    if not getattr(config, "sync_ref_model", False) or ref_model is not None:
        return
    if is_peft(model):
        raise ValueError(
            "sync_ref_model=True with a LoRA (peft) policy: pi_ref is this model with its "
            "adapter switched off, so there is no separate pi_ref to refresh (TRL refuses it "
            "too). Train without LoRA to refresh pi_ref, or set sync_ref_model=False"
        )
    raise ValueError(
        "sync_ref_model=True, but this trainer keeps no reference model to refresh: set "
        "beta > 0 (or track_kl=True), or sync_ref_model=False"
    )


class ReferenceSync:
    """Refreshes of pi_ref over a run: how many were made, and pi_0 (``init_model``) once the
    first one moved pi_ref off it, when ``keep_initial`` (GRPO logs ``kl_init/*`` with it)."""

    def __init__(self, keep_initial: bool = False):
        self.keep_initial = keep_initial
        self.refreshes = 0
        self.init_model: torch.nn.Module | None = None

    def after_step(self, step: int, config, ref_model, model) -> bool:
        """Refresh ``ref_model`` from ``model`` if ``config`` asks for it after step ``step``
        (1-based); True when it did."""
        if not getattr(config, "sync_ref_model", False):
            return False
        if not refresh_due(step, config.ref_model_sync_steps):
            return False
        if self.keep_initial and self.init_model is None:
            self.init_model = frozen_copy(ref_model)  # pi_0, before pi_ref first leaves it
        refresh_reference(ref_model, model, config.ref_model_mixup_alpha)
        self.refreshes += 1
        return True

    def state_dict(self, ref_model) -> dict:
        """``{"reference": ...}`` for a checkpoint once pi_ref has moved; else ``{}`` (it is
        the starting policy, rebuilt from the model the run started from)."""
        if not self.refreshes:
            return {}
        return {"reference": {"model": ref_model.state_dict(), "refreshes": self.refreshes}}

    def load_state_dict(self, state: dict, ref_model) -> None:
        """Restore pi_ref from a checkpoint's :meth:`state_dict` (nothing when it has none);
        ``ref_model`` is the trainer's as built, the starting policy, kept as pi_0 first."""
        if "reference" not in state:
            return
        if ref_model is None:
            raise ValueError(
                "the checkpoint holds a refreshed pi_ref (sync_ref_model) and this trainer keeps "
                "no reference model: resume with the run's own model, without LoRA"
            )
        if self.keep_initial and self.init_model is None:
            self.init_model = frozen_copy(ref_model)  # still pi_0 here: built from the start
        ref_model.load_state_dict(state["reference"]["model"])
        self.refreshes = state["reference"]["refreshes"]
