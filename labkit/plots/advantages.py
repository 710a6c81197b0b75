"""Figures for the advantages lab: the same rewards under each advantage scheme."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import torch

from labkit.core.advantages import group_advantages, rloo_advantages


def advantage_table(rewards, num_generations: int) -> pd.DataFrame:
    """One row per completion: its group, reward, and the advantage under each scheme.

    Schemes: GRPO's group z-score with the n-1 std (TRL) and with the population std,
    TRL's batch scaling, Dr. GRPO's unscaled ``r - mean``, and RLOO.

    >>> advantage_table([1.0, 0.0, 0.0, 1.0], 4)["z-score (population std)"].round(3).tolist()
    [1.0, -1.0, -1.0, 1.0]
    """
    r = torch.as_tensor(rewards, dtype=torch.float32)  # [B]
    G = num_generations
    return pd.DataFrame({
        "group": (torch.arange(len(r)) // G).tolist(),
        "reward": r.tolist(),
        "z-score (n-1 std, TRL)": group_advantages(r, G).tolist(),
        "z-score (population std)": group_advantages(r, G, std="population", eps=0.0).tolist(),
        "batch std (TRL 'batch')": group_advantages(r, G, scale_rewards="batch").tolist(),
        "r - mean (Dr. GRPO)": group_advantages(r, G, scale_rewards="none").tolist(),
        "RLOO": rloo_advantages(r, G).tolist() if G > 1 else [0.0] * len(r),
    })


def advantages_figure(rewards, num_generations: int) -> go.Figure:
    """Grouped bars: each completion's advantage under each scheme; rewards as black diamonds."""
    df = advantage_table(rewards, num_generations)
    x = [f"g{g} #{i % num_generations}" for i, g in enumerate(df["group"])]
    fig = go.Figure()
    for col in df.columns[2:]:
        fig.add_bar(x=x, y=df[col], name=col)
    fig.add_scatter(x=x, y=df["reward"], mode="markers", name="reward",
                    marker={"symbol": "diamond", "size": 11, "color": "black"})
    fig.update_layout(title=f"Advantages of the same rewards (G = {num_generations})",
                      xaxis_title="completion (group, index)", yaxis_title="advantage",
                      barmode="group")
    return fig
