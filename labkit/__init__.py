"""labkit: a Jupyter-first lab for reinforcement learning on language models.

Notebooks write ``import labkit as lk``. The math lives in :mod:`labkit.core` (pure torch) and
is re-exported here (``lk.kl_k3``, ``lk.policy_loss``, ...); the training loop is
:class:`GRPOTrainer`; figures are in :mod:`labkit.plots`; classic RL in :mod:`labkit.classic`.
"""

from labkit import classic, core, plots, testing
from labkit.config import GRPOConfig
from labkit.core import *
from labkit.evaluate import accuracy
from labkit.models import load_policy
from labkit.report import report
from labkit.rewards import digit_partial, exact_match, length_target
from labkit.runlog import RunLog, load_run
from labkit.tasks import get_task
from labkit.trainer import GRPOTrainer
from labkit.utils import fast_mode, pick, set_seed, show_source

__version__ = "0.1.0"

__all__ = [
    "GRPOConfig", "GRPOTrainer", "RunLog", "accuracy", "classic", "core", "digit_partial",
    "exact_match", "fast_mode", "get_task", "length_target", "load_policy", "load_run", "pick",
    "plots", "report", "set_seed", "show_source", "testing",
]
__all__ += core.__all__
from labkit import widgets  # noqa: F401
from labkit.compare import compare_frame, compare_runs  # noqa: E402,F401
from labkit.ppo import PPOConfig, PPOTrainer  # noqa: E402,F401
from labkit.trl_bridge import RunLogCallback, trl_config  # noqa: F401
from labkit.dpo import DPOConfig, DPOTrainer  # noqa: E402,F401
from labkit import pairs, rlhf  # noqa: E402,F401
