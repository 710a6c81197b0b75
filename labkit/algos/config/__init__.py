"""Every algorithm's config, one dataclass each, on one base. Field names follow TRL where TRL
has the concept, the paper's symbol (``SYMBOLS``) where it does not.

Bad values are refused in ``__post_init__`` with a message that names the field and the fix,
before any work is done: numbers with :func:`require`, string options with
:func:`labkit.core.options.choose` over the allowed values defined once in
:mod:`labkit.core.options`. ``docs/CONFIG.md`` is the table of every field, made by
``python scripts/config_table.py``.

One module per family, every name imported from here (``from labkit.algos.config import
GRPOConfig``): ``base`` (:func:`require`, :func:`at_least`, ``SYMBOLS``, :class:`TrainConfig`),
``grpo`` (:class:`GRPOConfig`, :class:`MultiTurnConfig`, :class:`OnlineDPOConfig`), ``ppo`` (:class:`PPOConfig`),
``trpo`` (:class:`TRPOConfig`),
``offline`` (:class:`PairsConfig` and on it :class:`DPOConfig`, :class:`RewardModelConfig`,
:class:`SFTConfig`, :class:`VerifierConfig`) and ``presets`` (``BASE_RUN``, ``DEMO_DEFAULTS``). ``__all__`` is also the
order of the tables in ``docs/CONFIG.md``.

>>> GRPOConfig(beta=-1)
Traceback (most recent call last):
...
ValueError: beta=-1: the KL weight cannot be negative; use 0 (no reference model) or a small positive value such as 0.04
"""

from labkit.algos.config.base import SYMBOLS, TrainConfig, at_least, require
from labkit.algos.config.grpo import GRPOConfig, MultiTurnConfig, OnlineDPOConfig
from labkit.algos.config.offline import (
    DPOConfig,
    PairsConfig,
    RewardModelConfig,
    SFTConfig,
    VerifierConfig,
)
from labkit.algos.config.ppo import PPOConfig
from labkit.algos.config.presets import BASE_RUN, DEMO_DEFAULTS
from labkit.algos.config.trpo import TRPOConfig

__all__ = [  # noqa: RUF022 - not sorted: the configs in the order of docs/CONFIG.md's tables
    "SYMBOLS",
    "BASE_RUN",
    "DEMO_DEFAULTS",
    "require",
    "at_least",
    "TrainConfig",
    "GRPOConfig",
    "PPOConfig",
    "TRPOConfig",
    "PairsConfig",
    "DPOConfig",
    "RewardModelConfig",
    "SFTConfig",
    "VerifierConfig",
    "MultiTurnConfig",
    "OnlineDPOConfig",
]
