"""Multi-turn and tool environments in TRL's ``environment_factory`` shape.

  base        ``env_tools`` (a class's tool methods, as TRL finds them), ``call_tool`` (time
              limit, faults), ``BracketProtocol`` (the toy envs' text protocol: ``[37*48=``
              -> ``1776]``)
  calculator  ``Calculator`` (tool ``calc``), ``CalcTask`` (easy / medium / hard prompts),
              ``tool_reward`` (answer right, minus a cost per call), cold-start traces
  guess       ``GuessNumber`` (tool ``guess``, ``get_reward`` by turns), ``GuessTask``

The episode loop that runs them is ``labkit.models.episode``; the trainer
``labkit.algos.multiturn.MultiTurnGRPOTrainer``.
"""

from labkit.envs.base import BracketProtocol, ToolResult, call_tool, env_tools
from labkit.envs.calculator import CalcTask, Calculator, tool_reward
from labkit.envs.guess import GuessNumber, GuessTask

ENVS = {"calculator": (Calculator, CalcTask), "guess": (GuessNumber, GuessTask)}
"""name -> (environment class, task class)."""

__all__ = [
    "ENVS",
    "BracketProtocol",
    "CalcTask",
    "Calculator",
    "GuessNumber",
    "GuessTask",
    "ToolResult",
    "call_tool",
    "env_tools",
    "tool_reward",
]
