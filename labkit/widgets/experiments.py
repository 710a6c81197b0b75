"""A lab's "run it yourself" cell: an experiment run over seeds with a progress bar and one live
figure (each arm's mean over the seeds so far, with its 95 % band), redrawn from the run logs
on disk while the worker processes train.

``run_live(dapo.EXPERIMENT, "entropy")`` runs the experiment's live configuration (about two
minutes on a laptop CPU); ``fast=True`` the CI one; ``full=True`` every arm and seed of the
stored result (what ``scripts/run_experiment.py`` already finished is read back).
"""

from __future__ import annotations

import plotly.graph_objects as go
from IPython.display import display

from labkit.plots.seeds import band_figure


def run_live(
    experiment,
    metric: str,
    fast: bool = False,
    full: bool = False,
    smooth: int = 1,
    workers: int | None = None,
    show: bool = True,
):
    """Run ``experiment``'s live (or fast, or full) configuration, drawing ``metric`` as it
    trains; returns the :class:`~labkit.experiments.harness.Result`."""
    cfg = experiment.live_config(fast=fast, full=full)
    fig = go.FigureWidget(band_figure(experiment.partial_curves(cfg["root"], [], []), metric))
    fig.update_layout(title=f"{metric}: mean over the seeds so far, 95 % CI band (live)")
    if show:
        display(fig)

    def redraw() -> None:
        curves = experiment.partial_curves(cfg["root"], cfg["arms"], cfg["seeds"])
        if len(curves) and metric in curves:
            new = band_figure(curves, metric, arms=cfg["arms"], smooth=smooth)
            with fig.batch_update():
                fig.data = []
                fig.add_traces(new.data)

    result = experiment.run(**cfg, workers=workers, on_tick=redraw)
    redraw()
    return result
