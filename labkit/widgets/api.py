"""What ``labkit.widgets`` exports for the live labs (``lk.widgets.Dashboard(trainer)``, ...)."""

from labkit.widgets.browser import CompletionBrowser
from labkit.widgets.dashboard import Dashboard, LiveFigure
from labkit.widgets.experiments import run_live
from labkit.widgets.explorers import AdvantageExplorer, KLExplorer
from labkit.widgets.reward_editor import RewardEditor
from labkit.widgets.sandbox import Bank, bank_from_samples, compile_reward, evaluate_reward

__all__ = [
    "AdvantageExplorer",
    "Bank",
    "CompletionBrowser",
    "Dashboard",
    "KLExplorer",
    "LiveFigure",
    "RewardEditor",
    "bank_from_samples",
    "compile_reward",
    "evaluate_reward",
    "run_live",
]
