"""Where the widgets are shown, and what to draw where custom widgets cannot render.

Core ipywidgets (buttons, sliders, text) render in JupyterLab, Notebook 7, VS Code and Colab.
Custom widgets (plotly's ``FigureWidget``, labkit's code editor: both anywidget models) need
Colab's custom widget manager, switched on by
``google.colab.output.enable_custom_widget_manager()``: :func:`custom_widgets` calls it once,
the first time a labkit widget is built on Colab, and says so in one line. Where that fails, or
where ``LABKIT_WIDGETS=static`` asks for it (a viewer that renders no custom widget, an export),
:func:`figure_widget` gives a :class:`StaticFigure` instead: a plain figure shown through a
display handle and redrawn in place after each ``batch_update()``, so live views still move.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager

import ipywidgets as W
import plotly.graph_objects as go

ENV = "LABKIT_WIDGETS"
"""Environment variable: ``static`` (static figures, a Textarea for code) or ``widgets``."""
_COLAB: dict = {}  # "ok": whether enabling the custom widget manager worked (tried once)


def detect() -> str:
    """The front end this kernel serves: 'colab', 'vscode', 'jupyter', or 'python' (no kernel).

    >>> detect()  # a doctest runs without a kernel
    'python'
    """
    if "google.colab" in sys.modules:  # Colab's kernel imports it at start
        return "colab"
    try:
        from IPython import get_ipython
    except ImportError:
        return "python"
    ip = get_ipython()
    if ip is None or not hasattr(ip, "kernel"):
        return "python"
    if "__vsc_ipynb_file__" in ip.user_ns or "VSCODE_PID" in os.environ:
        return "vscode"  # VS Code's Jupyter extension sets the first; its terminals the second
    return "jupyter"


def enable_colab() -> bool:
    """Switch on Colab's custom widget manager once (one line printed); False if it failed."""
    if "ok" not in _COLAB:
        try:
            from google.colab import output

            output.enable_custom_widget_manager()
            _COLAB["ok"] = True
            print("labkit: Colab's custom widget manager is on (live figures, code editor)")
        except Exception as e:  # noqa: BLE001 - any failure means: draw static figures
            _COLAB["ok"] = False
            print(
                f"labkit: Colab's custom widget manager failed ({type(e).__name__}: {e}); "
                "figures are static, redrawn in place"
            )
    return _COLAB["ok"]


def custom_widgets() -> bool:
    """Whether custom widgets (FigureWidget, the code editor) can render here.

    ``LABKIT_WIDGETS`` decides when set; on Colab, whether the custom widget manager could be
    switched on; elsewhere True.
    """
    mode = os.environ.get(ENV, "").strip().lower()
    if mode:
        if mode not in ("static", "widgets"):
            raise ValueError(f"{ENV}={mode!r}: use 'static' or 'widgets' (or leave it unset)")
        return mode == "widgets"
    if detect() == "colab":
        return enable_colab()
    return True


class StaticFigure(go.Figure):
    """A plain figure that redraws wherever it was displayed after each ``batch_update()``
    (through IPython display handles), so code written for a FigureWidget runs unchanged."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._handles: list = []
        self._output = None

    def _bundle(self) -> dict:
        """plotly's JSON mimetype (JupyterLab, VS Code) beside what the default renderer makes
        (Colab's HTML); each front end shows the richest it knows."""
        import plotly.io as pio

        bundle = pio.renderers._build_mime_bundle(self.to_dict(), "plotly_mimetype")
        return {**bundle, **self._repr_mimebundle_(), "text/plain": "labkit figure"}

    def _ipython_display_(self) -> None:
        from IPython.display import display

        self._handles.append(display(self._bundle(), raw=True, display_id=True))

    @contextmanager
    def batch_update(self):
        with super().batch_update():
            yield
        self.redraw()

    def redraw(self) -> None:
        """Replace every displayed copy of the figure with its current state."""
        handles = [h for h in getattr(self, "_handles", []) if h is not None]
        if not handles and getattr(self, "_output", None) is None:
            return
        bundle = self._bundle()
        for h in handles:
            h.update(bundle, raw=True)
        if self._output is not None:
            self._output.outputs = (
                {"output_type": "display_data", "data": bundle, "metadata": {}},
            )

    @property
    def output(self) -> W.Output:
        """An Output widget showing the figure (for a widget's children). Its ``outputs`` are
        set directly, not captured: no capture context to share with other threads."""
        if self._output is None:
            self._output = W.Output()
            self.redraw()
        return self._output


def figure_widget(fig: go.Figure) -> go.FigureWidget | StaticFigure:
    """``go.FigureWidget(fig)``, or a :class:`StaticFigure` where custom widgets cannot render."""
    return go.FigureWidget(fig) if custom_widgets() else StaticFigure(fig)


def place(fig) -> W.Widget:
    """What to put in a widget's children for ``fig``: itself, or a StaticFigure's Output."""
    return fig.output if isinstance(fig, StaticFigure) else fig
