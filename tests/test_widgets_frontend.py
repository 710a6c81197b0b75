"""Where the widgets run: Colab (a stand-in ``google.colab`` module), VS Code, and the static
fallback where custom widgets cannot render (figures redrawn in place through display handles).
"""

import base64
import sys
import types

import numpy as np
import plotly.graph_objects as go
import pytest

import labkit as lk
from labkit.widgets import frontend
from labkit.widgets.code_editor import CodeEditor, PlainCodeEditor


@pytest.fixture
def colab(monkeypatch):
    """A stand-in ``google.colab`` whose output module counts enable_custom_widget_manager
    calls (``fail=True``: it raises, as on a Colab that lacks it)."""
    calls = []

    def install(fail: bool = False):
        def enable():
            calls.append(1)
            if fail:
                raise RuntimeError("no custom widget manager here")

        google, col, out = (types.ModuleType(n) for n in ("google", "google.colab", "output"))
        out.enable_custom_widget_manager = enable
        col.output, google.colab = out, col
        for name, mod in (("google", google), ("google.colab", col), ("google.colab.output", out)):
            monkeypatch.setitem(sys.modules, name, mod)
        return calls

    monkeypatch.setattr(frontend, "_COLAB", {})
    monkeypatch.delenv(frontend.ENV, raising=False)
    return install


def test_colab_is_detected_and_its_widget_manager_enabled_once(colab, capsys):
    calls = colab()
    assert frontend.detect() == "colab"
    assert frontend.custom_widgets() and frontend.custom_widgets()
    assert calls == [1]  # labkit's call, once
    ed = lk.widgets.RewardEditor(lk.widgets.Bank(["1", "2"], {"answer": ["1", "1"]}))
    lk.widgets.RewardEditor(lk.widgets.Bank(["1", "2"], {"answer": ["1", "1"]}))
    assert isinstance(ed.code, CodeEditor) and isinstance(ed.fig, go.FigureWidget)
    # anywidget (under the editor and plotly's FigureWidget) makes the same call once per
    # process when google.colab.output is loaded, which labkit's import ensures
    assert len(calls) <= 2
    out = capsys.readouterr().out.strip().splitlines()
    assert out == ["labkit: Colab's custom widget manager is on (live figures, code editor)"]


def test_a_colab_without_the_manager_gets_static_figures_and_a_textarea(colab, capsys):
    colab(fail=True)
    assert not frontend.custom_widgets()
    ed = lk.widgets.RewardEditor(lk.widgets.Bank(["1", "2"], {"answer": ["1", "1"]}))
    assert isinstance(ed.code, PlainCodeEditor)
    assert isinstance(ed.fig, frontend.StaticFigure)
    assert "failed (RuntimeError: no custom widget manager here)" in capsys.readouterr().out


def test_vscode_is_detected(monkeypatch):
    shell = types.SimpleNamespace(kernel=object(), user_ns={"__vsc_ipynb_file__": "a.ipynb"})
    monkeypatch.setattr("IPython.get_ipython", lambda: shell)
    assert frontend.detect() == "vscode"
    shell.user_ns.clear()
    monkeypatch.delenv("VSCODE_PID", raising=False)
    assert frontend.detect() == "jupyter"


def test_the_env_variable_decides_and_a_typo_is_refused(monkeypatch):
    monkeypatch.setenv(frontend.ENV, "static")
    assert not frontend.custom_widgets()
    monkeypatch.setenv(frontend.ENV, "widgets")
    assert frontend.custom_widgets()
    monkeypatch.setenv(frontend.ENV, "statik")
    with pytest.raises(ValueError, match="LABKIT_WIDGETS='statik': use 'static' or 'widgets'"):
        frontend.custom_widgets()


def _array(v) -> np.ndarray:
    """A plotly JSON array: a list, or a typed array as base64 (``{"dtype", "bdata"}``)."""
    if isinstance(v, dict):
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"])
    return np.asarray(v)


class _Handle:
    def __init__(self, bundle):
        self.shown = [bundle]

    def update(self, bundle, raw=False):
        self.shown.append(bundle)


def test_a_static_dashboard_figure_is_redrawn_in_place(monkeypatch):
    handles = []

    def display(bundle, raw=False, display_id=None):
        handles.append(_Handle(bundle))
        return handles[-1]

    monkeypatch.setattr("IPython.display.display", display)
    monkeypatch.setenv(frontend.ENV, "static")
    tr = lk.GRPOTrainer(num_generations=2, prompts_per_step=2, max_steps=3, diagnostics=0)
    live = lk.widgets.LiveFigure(tr.log)
    assert isinstance(live.fig, frontend.StaticFigure)
    live.fig._ipython_display_()  # what display(live.fig) does in a notebook
    tr.train(progress=False, callback=lambda trainer, metrics: live.refresh())
    (h,) = handles
    assert len(h.shown) == 1 + 3  # shown once, redrawn after each of the 3 steps
    last = h.shown[-1]["application/vnd.plotly.v1+json"]["data"][0]
    assert list(_array(last["x"])) == [1, 2, 3]
    assert list(_array(last["y"])) == pytest.approx(tr.log.metrics["reward/mean"].tolist())


def test_a_static_dashboard_shows_its_figure_in_an_output_updated_each_step(monkeypatch):
    monkeypatch.setenv(frontend.ENV, "static")
    tr = lk.GRPOTrainer(num_generations=2, prompts_per_step=2, max_steps=2, diagnostics=0)
    d = lk.widgets.Dashboard(tr, steps=2)
    assert isinstance(d.fig, frontend.StaticFigure)
    d.run()
    (shown,) = d.fig.output.outputs  # the figure's one display, replaced after each redraw
    last = shown["data"]["application/vnd.plotly.v1+json"]["data"][0]
    assert list(_array(last["x"])) == [1, 2]
