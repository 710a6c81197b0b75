"""labkit: a Jupyter-first lab for reinforcement learning on language models.

Notebooks write ``import labkit as lk``. The math lives in :mod:`labkit.core` (pure torch) and
is re-exported here (``lk.kl_k3``, ``lk.policy_loss``, ...); the trainers (:mod:`labkit.algos`,
one ``Trainer`` base) are :class:`GRPOTrainer`, :class:`PPOTrainer`, :class:`DPOTrainer`,
:class:`RewardModelTrainer` and :class:`SFTTrainer`; figures are in :mod:`labkit.plots`;
classic RL in :mod:`labkit.classic`. ARCHITECTURE.md draws the packages.

``import labkit`` loads torch and numpy, not the heavy rest: ``lk.plots``, ``lk.report`` and
``lk.compare_runs`` (plotly, pandas, scipy), ``lk.RunLogCallback`` and ``lk.trl_config``
(transformers, peft), ``lk.widgets`` (ipywidgets) and ``lk.experiments`` are imported on first
use (PEP 562's module ``__getattr__``); transformers loads when a model is first built, pandas
when a table is first made. So a notebook's first cell is quick, and the math and the trainers
import without a Jupyter stack. ``benchmarks/import_time.py`` times it.
"""

import importlib

from labkit import classic, core, testing
from labkit.algos import pairs, rlhf
from labkit.algos.config import DPOConfig, GRPOConfig, PPOConfig
from labkit.algos.dpo import DPOTrainer
from labkit.algos.grpo import GRPOTrainer
from labkit.algos.ppo import PPOTrainer
from labkit.algos.reward_model import RewardModelTrainer, load_reward_model
from labkit.algos.sft import SFTTrainer
from labkit.core import *  # the math: lk.gae, lk.kl_k3, lk.policy_loss, ...
from labkit.models.policy import checkpoint_card, load_policy
from labkit.models.rollout import Rollout
from labkit.rewards import digit_partial, exact_match, length_target
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

# reward tools: the runtime (time limits, worker processes), code execution (the bench and the
# doctor, reward_bench and diagnose, are in LAZY below: they pull in pandas)
from labkit.rewards.code import code_reward, code_tests, run_code
from labkit.rewards.runtime import RewardRunner

__all__ += ["RewardRunner", "code_reward", "code_tests", "diagnose", "reward_bench", "run_code"]

# multi-turn and tool environments (TRL's environment_factory shape)
from labkit import envs
from labkit.algos.config import MultiTurnConfig
from labkit.algos.multiturn import MultiTurnGRPOTrainer

__all__ += ["MultiTurnConfig", "MultiTurnGRPOTrainer", "envs"]


# name -> the module that defines it, imported on first use: what it pulls in is said on the right
LAZY = {
    "plots": "labkit.plots",  # plotly, pandas, scipy (the KL explorer's table)
    "report": "labkit.plots.report",
    "compare_runs": "labkit.plots.runs",
    "RunLogCallback": "labkit.integrations.trl_bridge",  # transformers, peft, accelerate
    "trl_config": "labkit.integrations.trl_bridge",
    "compare_frame": "labkit.runs.compare",  # pandas
    "diagnose": "labkit.runs.diagnose",
    "reward_bench": "labkit.rewards.bench",
    "widgets": "labkit.widgets",  # ipywidgets, anywidget
    "experiments": "labkit.experiments",  # scipy, the stored results
}


def __getattr__(name: str):
    if name not in LAZY:
        raise AttributeError(f"module 'labkit' has no attribute {name!r}")
    module = importlib.import_module(LAZY[name])
    value = module if module.__name__ == f"labkit.{name}" else getattr(module, name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))  # tab completion lists the lazy names too


# PG -> TRPO -> PPO on a language model: PPO-clip, PPO's adaptive KL penalty, TRPO
from labkit.algos.config import TRPOConfig
from labkit.algos.trpo import TRPOTrainer

__all__ += ["TRPOConfig", "TRPOTrainer"]
