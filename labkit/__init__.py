"""labkit: a Jupyter-first lab for reinforcement learning on language models.

Notebooks write ``import labkit as lk``. The math lives in :mod:`labkit.core` (pure torch),
the training loop in :mod:`labkit.trainer`, figures in :mod:`labkit.plots`.
"""

from labkit import classic, testing  # noqa: F401  (lk.classic.*, lk.testing.check)
from labkit.core import *  # re-export the math: lk.gae, lk.kl_k3, lk.policy_loss, ...
from labkit.utils import fast_mode, pick, set_seed, show_source

__version__ = "0.1.0"

__all__ = ["fast_mode", "pick", "set_seed", "show_source"]
