"""Figures for the language-consistency lab (``labkit.experiments.language``)."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from labkit.plots.r1_zero import panels

KEYS = {
    "rewards/mixed/mean": "mixing rate (thoughts)",
    "rewards/language_consistency/mean": "share of steps in digits",
    "accuracy": "accuracy",
    "rewards/thinks/mean": "think rate",
}
"""metric key -> panel title (training batch, per step)."""


def mixing_figure(curves: pd.DataFrame, smooth: int = 5) -> go.Figure:
    """Mixing rate, digit share, accuracy and think rate over steps, one colour per arm, the
    mean over seeds with its 95 % band."""
    return panels(curves, KEYS, smooth=smooth)
