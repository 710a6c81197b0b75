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
    return pd.DataFrame(
        {
            "group": (torch.arange(len(r)) // G).tolist(),
            "reward": r.tolist(),
            "z-score (n-1 std, TRL)": group_advantages(r, G).tolist(),
            "z-score (population std)": group_advantages(r, G, std="population", eps=0.0).tolist(),
            "batch std (TRL 'batch')": group_advantages(r, G, scale_rewards="batch").tolist(),
            "r - mean (Dr. GRPO)": group_advantages(r, G, scale_rewards="none").tolist(),
            "RLOO": rloo_advantages(r, G).tolist() if G > 1 else [0.0] * len(r),
        }
    )


def scheme_bars(df, schemes: list[str], G: int) -> go.Figure:
    """One bar per completion and scheme (columns ``schemes`` of ``df``, which also has
    ``group`` and ``reward``); rewards as black diamonds. Shared by the run-step figures."""
    x = [f"g{g} #{i % G}" for i, g in enumerate(df["group"])]
    fig = go.Figure()
    for col in schemes:
        fig.add_bar(x=x, y=df[col], name=col)
    fig.add_scatter(
        x=x,
        y=df["reward"],
        mode="markers",
        name="reward",
        marker={"symbol": "diamond", "size": 11, "color": "black"},
    )
    fig.update_layout(
        xaxis_title="completion (group, index)", yaxis_title="advantage", barmode="group"
    )
    return fig


def advantages_figure(rewards, num_generations: int) -> go.Figure:
    """Grouped bars: each completion's advantage under each scheme; rewards as black diamonds."""
    df = advantage_table(rewards, num_generations)
    fig = scheme_bars(df, list(df.columns[2:]), num_generations)
    fig.update_layout(title=f"Advantages of the same rewards (G = {num_generations})")
    return fig


def zero_spread_figure(ps=None, group_sizes=(4, 8, 16), n_groups: int = 2000, seed: int = 0):
    """Fraction of groups whose advantages are all zero (no learning signal: DAPO's dynamic
    sampling drops them), for 0/1 rewards with success probability p: simulated with
    :func:`group_advantages` (markers) and the closed form p^G + (1 - p)^G (lines)."""
    ps = torch.linspace(0.0, 1.0, 21) if ps is None else torch.as_tensor(ps, dtype=torch.float32)
    g = torch.Generator().manual_seed(seed)
    fig = go.Figure()
    for G in group_sizes:
        frac = []
        for p in ps:
            r = (torch.rand(n_groups * G, generator=g) < p).float()  # [N G]
            adv = group_advantages(r, G).view(n_groups, G)  # [N, G]
            frac.append(float((adv == 0).all(-1).float().mean()))
        fig.add_scatter(x=ps.numpy(), y=frac, mode="markers", name=f"G = {G} simulated")
        fig.add_scatter(
            x=ps.numpy(),
            y=(ps**G + (1 - ps) ** G).numpy(),
            mode="lines",
            name=f"G = {G}: p^G + (1-p)^G",
            line={"dash": "dot"},
        )
    fig.update_layout(
        title="Groups with zero spread carry no gradient",
        xaxis_title="p = P(reward = 1)",
        yaxis_title="fraction of groups, all A = 0",
    )
    return fig
