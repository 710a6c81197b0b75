"""labkit: a Jupyter-first lab for reinforcement learning on language models.

Notebooks write ``import labkit as lk``. The math lives in :mod:`labkit.core` (pure torch) and
is re-exported here (``lk.kl_k3``, ``lk.policy_loss``, ...); the trainers (:mod:`labkit.algos`,
one ``Trainer`` base) are :class:`GRPOTrainer`, :class:`PPOTrainer`, :class:`DPOTrainer`,
:class:`RewardModelTrainer` and :class:`SFTTrainer`; figures are in :mod:`labkit.plots`;
classic RL in :mod:`labkit.classic`. ARCHITECTURE.md draws the packages. ``lk.widgets`` (ipywidgets) is
imported on first use, so the math and the trainers import without a Jupyter stack.
"""

import importlib

from labkit import classic, core, plots, testing
from labkit.algos import pairs, rlhf
from labkit.algos.config import DPOConfig, GRPOConfig, PPOConfig
from labkit.algos.dpo import DPOTrainer
from labkit.algos.grpo import GRPOTrainer
from labkit.algos.ppo import PPOTrainer
from labkit.algos.reward_model import RewardModelTrainer, load_reward_model
from labkit.algos.sft import SFTTrainer
from labkit.core import *  # the math: lk.gae, lk.kl_k3, lk.policy_loss, ...
from labkit.integrations.trl_bridge import RunLogCallback, trl_config
from labkit.models.policy import checkpoint_card, load_policy
from labkit.models.rollout import Rollout
from labkit.plots.report import report
from labkit.plots.runs import compare_runs
from labkit.rewards import digit_partial, exact_match, length_target
from labkit.runs.compare import compare_frame
from labkit.runs.evaluate import accuracy
from labkit.runs.log import RunLog, load_run
from labkit.tasks import get_task
from labkit.utils import fast_mode, pick, set_seed, show_source

__version__ = "0.1.0"

__all__ = [
    "DPOConfig",
    "DPOTrainer",
    "GRPOConfig",
    "GRPOTrainer",
    "PPOConfig",
    "PPOTrainer",
    "RewardModelTrainer",
    "Rollout",
    "RunLog",
    "RunLogCallback",
    "SFTTrainer",
    "accuracy",
    "checkpoint_card",
    "classic",
    "compare_frame",
    "compare_runs",
    "core",
    "digit_partial",
    "exact_match",
    "experiments",
    "fast_mode",
    "get_task",
    "length_target",
    "load_policy",
    "load_reward_model",
    "load_run",
    "pairs",
    "pick",
    "plots",
    "report",
    "rlhf",
    "set_seed",
    "show_source",
    "testing",
    "trl_config",
    "widgets",
]
__all__ += core.__all__

# reward tools: the runtime (time limits, worker processes), code execution, the bench, the doctor
from labkit.rewards.bench import reward_bench
from labkit.rewards.code import code_reward, code_tests, run_code
from labkit.rewards.runtime import RewardRunner
from labkit.runs.diagnose import diagnose

__all__ += ["RewardRunner", "code_reward", "code_tests", "diagnose", "reward_bench", "run_code"]

# multi-turn and tool environments (TRL's environment_factory shape)
from labkit import envs
from labkit.algos.config import MultiTurnConfig
from labkit.algos.multiturn import MultiTurnGRPOTrainer

__all__ += ["MultiTurnConfig", "MultiTurnGRPOTrainer", "envs"]


def __getattr__(name: str):
    if name == "widgets":  # lazy: ipywidgets and anywidget only when a widget is wanted
        return importlib.import_module("labkit.widgets")
    if name == "experiments":  # lazy: scipy and the stored results only when a lab wants them
        return importlib.import_module("labkit.experiments")
    raise AttributeError(f"module 'labkit' has no attribute {name!r}")


# PG -> TRPO -> PPO on a language model: PPO-clip, PPO's adaptive KL penalty, TRPO
from labkit.algos.config import TRPOConfig
from labkit.algos.trpo import TRPOTrainer

__all__ += ["TRPOConfig", "TRPOTrainer"]
