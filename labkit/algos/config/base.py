"""What every config shares: the one validation style (:func:`require`, :func:`at_least`),
the paper's symbol of a field (``SYMBOLS``) and :class:`TrainConfig`, the optimiser, schedule,
length, seed and checkpoints of every trainer.

>>> TrainConfig(max_steps=0)
Traceback (most recent call last):
...
ValueError: max_steps=0: use 1 or more
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import asdict, dataclass

from labkit.core import options as opt
from labkit.core.options import choose

SYMBOLS = {
    "learning_rate": "η",
    "max_grad_norm": "‖g‖max",
    "num_generations": "G",
    "prompts_per_step": "B/G",
    "max_completion_length": "L_max",
    "temperature": "τ",
    "top_p": "p",
    "top_k": "k",
    "beta": "β",
    "epsilon": "ε_low",
    "epsilon_high": "ε_high",
    "num_iterations": "μ",
    "kl_estimator": "k1/k2/k3",
    "overlong_buffer": "L_cache",
    "gamma": "γ",
    "lam": "λ",
    "vf_coef": "c_vf",
    "cliprange_value": "ε_v",
    "ppo_epochs": "K",
    "batch_size": "B",
    "entropy_coef": "c_H",
    "off_policy_mask": "δ",
    "delta": "δ",
    "beta_old": "β",
    "d_targ": "d_targ",
    "ref_model_mixup_alpha": "α",
    "ref_model_sync_steps": "τ",
}
"""The paper's symbol of a field, where it has one (DeepSeekMath, DAPO, PPO, DPO, TR-DPO)."""


def require(ok: bool, message: str) -> None:
    """Raise ``ValueError(message)`` unless ``ok``: the one validation style of every config."""
    if not ok:
        raise ValueError(message)


def at_least(config, lo, *names: str) -> None:
    """Each field in ``names`` must be >= ``lo`` (0: 'use 0 (off) or more')."""
    for name in names:
        v = getattr(config, name)
        require(v >= lo, f"{name}={v}: use {'0 (off)' if lo == 0 else lo} or more")


def check_ref_sync(config) -> None:
    """TR-DPO's refresh of pi_ref (``sync_ref_model``, ``ref_model_mixup_alpha``,
    ``ref_model_sync_steps``: TRL's names), on the configs that have it (GRPO's, DPO's)."""
    alpha, every = config.ref_model_mixup_alpha, config.ref_model_sync_steps
    require(
        0 < alpha <= 1,
        f"ref_model_mixup_alpha={alpha}: use 0 < alpha <= 1 (1: pi_ref := pi_theta, a hard "
        "update; TRL's default 0.6); to keep pi_ref fixed, set sync_ref_model=False",
    )
    require(
        every >= 1,
        f"ref_model_sync_steps={every}: use 1 or more (steps between refreshes of pi_ref; "
        "TRL's default 512)",
    )


def unknown_field(cls: type, name: str) -> str:
    """The message for a field ``cls`` does not have: the closest name, else every field.

    >>> unknown_field(TrainConfig, "learning_rte")
    "TrainConfig has no field 'learning_rte': did you mean 'learning_rate'? (every field of every config: docs/CONFIG.md)"
    """
    known = [f.name for f in dataclasses.fields(cls)]
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    hint = f"did you mean {close[0]!r}?" if close else f"its fields are {', '.join(known)}"
    return f"{cls.__name__} has no field {name!r}: {hint} (every field of every config: docs/CONFIG.md)"


class _Checked(type):
    """Configs refuse an unknown keyword with the closest field's name, wherever they are made
    (``GRPOConfig(...)``, a trainer's ``**overrides``, ``update(...)``: all call the class)."""

    def __call__(cls, *args, **kwargs):
        known = {f.name for f in dataclasses.fields(cls)}
        for name in kwargs:
            if name not in known:
                raise TypeError(unknown_field(cls, name))
        return super().__call__(*args, **kwargs)


@dataclass
class TrainConfig(metaclass=_Checked):
    """What every trainer shares: the optimiser (AdamW), its schedule, the run's length, the
    seed and checkpoints."""

    learning_rate: float = 1e-3
    """AdamW learning rate at the peak of the schedule."""
    lr_scheduler_type: str = "linear"
    """After warm-up: 'linear' decays to 0 at max_steps, 'cosine' too, 'constant' keeps it."""
    warmup_steps: int = 0
    """Linear warm-up of the learning rate over this many steps."""
    weight_decay: float = 0.0
    """AdamW's decoupled weight decay."""
    max_grad_norm: float = 1.0
    """Gradient clipping by global norm (0: off; the norm is recorded either way)."""
    max_steps: int = 200
    """Optimisation steps of the run (the schedule ends here)."""
    seed: int = 0
    """Seeds Python, torch, the prompt sampler and the sampling generator."""
    save_steps: int = 50
    """Write a checkpoint every save_steps steps when the run has a name (0: never); a named
    run also writes one when ``train()`` returns (done or stopped), so it resumes from there.
    Every step costs a full model + optimizer state (GBs for SmolLM2): TRL's default is 500."""
    save_total_limit: int | None = 2
    """Checkpoints kept (oldest deleted first); None keeps all (to fork at any step)."""
    precision: str = "auto"
    """Autocast: 'auto' (bf16 on GPUs >= sm80, fp16 + scaler on 7.x, else fp32) or forced."""
    gradient_checkpointing: bool = False
    """Recompute each layer's activations in backward instead of storing them (HF's, non-
    reentrant): less memory on long sequences for ~one more forward; no prompt sharing then."""
    report_to: tuple[str, ...] = ()
    """Trackers that also get the run's metrics, under TRL's names where TRL has them, and its
    completions: 'tensorboard' (event files in runs/<run_name>/tensorboard), 'trackio' (local)."""
    project: str = "labkit"
    """The trackio project the run is logged under (TRL's ``project``)."""

    def __post_init__(self):
        if isinstance(self.report_to, str):  # report_to="tensorboard", as TRL takes it
            self.report_to = () if self.report_to == "none" else (self.report_to,)
        self.report_to = tuple(self.report_to)
        for name in self.report_to:
            choose("report_to", name, opt.TRACKERS)
        require(self.learning_rate > 0, f"learning_rate={self.learning_rate}: use a value > 0")
        choose("lr_scheduler_type", self.lr_scheduler_type, opt.LR_SCHEDULES)
        at_least(self, 0, "warmup_steps", "weight_decay", "max_grad_norm", "save_steps")
        at_least(self, 1, "max_steps")
        require(
            self.save_total_limit is None or self.save_total_limit >= 1,
            f"save_total_limit={self.save_total_limit}: use 1 or more, or None (keep all)",
        )
        choose("precision", self.precision, opt.PRECISIONS)

    def to_dict(self) -> dict:
        return asdict(self)
