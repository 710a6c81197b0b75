"""``LiveFigure``: the dashboard's one figure, redrawn from a RunLog as it grows.

One ``go.FigureWidget`` (plotly ships its JS bundle with each one, so a dashboard keeps to one)
holding :func:`labkit.plots.live.live_figure`'s six panels, written inside ``batch_update()``:
one message per refresh. Where custom widgets cannot render it is a
:class:`labkit.widgets.frontend.StaticFigure`, redrawn in place by the same code.
"""

from __future__ import annotations

import threading

import numpy as np

from labkit.plots.live import (
    COLS,
    doctor_notes,
    event_shapes,
    live_figure,
    live_series,
    trace_keys,
    trace_style,
)
from labkit.widgets.frontend import figure_widget

WIDTH = 920
"""px: the notebook's output area on a 1366 x 768 laptop with JupyterLab's file browser open
is 934 px wide. A FigureWidget cannot fill its box by itself: it is drawn before it is attached
(so plotly falls back to 700 px), and a relayout sent to it while it is still drawing leaves it
blank (seen in Chromium under load), so the width is fixed up front."""


class LiveFigure:
    """The dashboard's figure and its incremental refresh from a RunLog.

    ``display(live.fig)`` shows it; ``live.refresh()`` after each step (a ``train`` callback)
    redraws it; ``live.set_findings(diagnose(log))`` puts the run doctor's warnings on the
    panels they concern.
    """

    def __init__(self, log, width: int = WIDTH):
        self.log = log
        self.fig = figure_widget(live_figure().update_layout(width=width))
        self._base_notes = list(self.fig.layout.annotations)  # the panel titles
        self._findings: list = []
        self._drawn_notes: tuple | None = None
        self._lock = threading.Lock()

    def set_findings(self, findings) -> None:
        """The run doctor's findings to show from the next refresh on."""
        self._findings = list(findings)

    def refresh(self) -> None:
        """Write every metric row, event and finding into the figure (one batched message)."""
        with self.log.lock:
            rows, events = list(self.log.records["metrics"]), list(self.log.records["events"])
        with self._lock:
            for p, key, name in trace_keys(rows)[len(self.fig.data) :]:
                # a reward swapped in, tool metrics: new traces, outside the batch (plotly
                # cannot add traces inside one)
                self.fig.add_scatter(
                    x=[], y=[], row=p // COLS + 1, col=p % COLS + 1, **trace_style(p, key, name)
                )
            shapes, notes = event_shapes(events)
            notes += doctor_notes(self._findings)
            with self.fig.batch_update():
                for trace, (x, y) in zip(self.fig.data, live_series(rows)):
                    # float arrays go to the browser as binary buffers (NaN-safe, and plotly
                    # validates them in one call instead of element by element)
                    trace.x = np.asarray(x, dtype=float)
                    trace.y = np.array([np.nan if v is None else v for v in y], dtype=float)
                key = (len(shapes), tuple(n["text"] for n in notes))
                if key != self._drawn_notes:
                    self._drawn_notes = key
                    self.fig.layout.shapes = shapes
                    self.fig.layout.annotations = self._base_notes + notes
