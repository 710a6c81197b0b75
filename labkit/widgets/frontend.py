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

import anywidget
import ipywidgets as W
import plotly.graph_objects as go
import traitlets

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
        if handles:
            bundle = self._bundle()
            for h in handles:
                h.update(bundle, raw=True)

    @property
    def output(self) -> W.Output:
        """An Output widget holding a display of the figure (for a widget's children)."""
        if self._output is None:
            self._output = W.Output()
            with self._output:
                self._ipython_display_()
        return self._output


_FIT_ESM = """
export default { render({ el }) {
  // Once attached, and whenever the box around it changes width (a sidebar opened, a tab
  // shown), tell plotly's responsive figures to refit: a window resize is what they listen to.
  let last = -1, timer = null;
  const fire = () => window.dispatchEvent(new Event("resize"));
  const watch = new ResizeObserver(() => {
    const w = el.parentElement ? el.parentElement.clientWidth : 0;
    if (w === last) return;
    last = w;
    clearTimeout(timer);
    timer = setTimeout(fire, 50);
  });
  requestAnimationFrame(() => el.parentElement && watch.observe(el.parentElement));
  return () => { watch.disconnect(); clearTimeout(timer); };
} };
"""


class FitWidth(anywidget.AnyWidget):
    """An invisible widget that makes the FigureWidgets beside it fill their box's width.

    A FigureWidget is drawn before it is attached, so plotly cannot measure its box and falls
    back to 700 px. With ``responsive`` in its config (:func:`figure_widget` sets it) it refits
    on a window resize, which this widget fires when its own box gets or changes a width.
    """

    _esm = _FIT_ESM
    fits = traitlets.Unicode("width").tag(sync=True)  # a synced trait: something to render


def figure_widget(fig: go.Figure) -> go.FigureWidget | StaticFigure:
    """``go.FigureWidget(fig)`` refitting to its box's width (see :class:`FitWidth`), or a
    :class:`StaticFigure` where custom widgets cannot render."""
    if not custom_widgets():
        return StaticFigure(fig)
    widget = go.FigureWidget(fig)
    widget._config = {**widget._config, "responsive": True}
    return widget


def place(fig, fit: bool = True) -> W.Widget:
    """What to put in a widget's children for ``fig``: the figure with a :class:`FitWidth`
    (``fit=False``: alone, drawn 700 px wide), or a StaticFigure's Output."""
    if isinstance(fig, StaticFigure):
        return fig.output
    return W.VBox([fig, FitWidth()]) if fit else fig
