"""``CodeEditor``: a Python code editor widget (CodeMirror 6 behind an anywidget model).

Python highlighting, line numbers, auto-indent (Enter after ``:`` indents, Tab indents the
selection), bracket matching, undo history. ``value`` holds the code and follows every edit;
Ctrl+Enter or Shift+Enter calls the functions registered with :meth:`CodeEditor.on_run` (the
reward editor's "Try"); ``error_line`` (1-based, 0 for none) marks a line, with
``error_message`` as its tooltip.

The front end is one ES module shipped in the package, ``static/code_editor.js`` (CodeMirror's
MIT-licensed packages bundled by ``scripts/build_editor.sh``; licences in
``static/code_editor.LICENSES.txt``), so it loads offline and on Colab. Where custom widgets
cannot render (:func:`labkit.widgets.frontend.custom_widgets` is False), :func:`code_input`
gives :class:`PlainCodeEditor`, a Textarea with the same fields and no shortcut.
"""

from __future__ import annotations

import pathlib

import anywidget
import ipywidgets as W
import traitlets

from labkit.widgets.frontend import custom_widgets

BUNDLE = pathlib.Path(__file__).parent / "static" / "code_editor.js"


class CodeEditor(anywidget.AnyWidget):
    """CodeMirror 6 with Python, synced to ``value``.

    >>> ed = CodeEditor(value="def f(completions, **kw):\\n    return [0.0]")
    >>> ran = []
    >>> ed.on_run(lambda: ran.append(ed.value))
    >>> ed.run()  # what Ctrl+Enter / Shift+Enter does in the browser
    >>> ran == [ed.value]
    True
    """

    _esm = BUNDLE
    value = traitlets.Unicode("").tag(sync=True)
    error_line = traitlets.Int(0).tag(sync=True)  # 1-based; 0: no line marked
    error_message = traitlets.Unicode("").tag(sync=True)
    height = traitlets.Unicode("180px").tag(sync=True)  # the editing area's minimum height

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._run_callbacks: list = []
        self.on_msg(self._on_custom_msg)

    def on_run(self, callback) -> None:
        """Call ``callback()`` when the user presses Ctrl+Enter or Shift+Enter."""
        self._run_callbacks.append(callback)

    def run(self) -> None:
        """Run the registered callbacks (the shortcut's action)."""
        for callback in self._run_callbacks:
            callback()

    def _on_custom_msg(self, _widget, content, _buffers) -> None:
        # The shortcut's message carries the code: the front end may still hold back the
        # value updates of the last keystrokes (ipywidgets throttles them while the kernel is
        # busy) and a custom message overtakes them.
        if isinstance(content, dict) and content.get("event") == "run":
            if isinstance(content.get("value"), str):
                self.value = content["value"]
            self.run()

    def mark_error(self, line: int | None, message: str = "") -> None:
        """Highlight ``line`` (1-based) with ``message`` as its tooltip; None clears it."""
        self.error_message = message if line else ""
        self.error_line = int(line or 0)


class PlainCodeEditor(W.Textarea):
    """A Textarea with :class:`CodeEditor`'s fields, for front ends without custom widgets:
    no highlighting, no shortcut (the Try button runs the code), the error line only in the
    message."""

    error_line = traitlets.Int(0)
    error_message = traitlets.Unicode("")

    def __init__(self, **kwargs):
        height = kwargs.pop("height", "180px")
        super().__init__(layout={"width": "100%", "height": height}, **kwargs)

    def on_run(self, callback) -> None:
        """No shortcut in a Textarea: kept so the editor's code reads the same."""

    def mark_error(self, line: int | None, message: str = "") -> None:
        self.error_message = message if line else ""
        self.error_line = int(line or 0)


def code_input(value: str = "", height: str = "180px") -> CodeEditor | PlainCodeEditor:
    """A :class:`CodeEditor`, or a :class:`PlainCodeEditor` where custom widgets cannot render."""
    cls = CodeEditor if custom_widgets() else PlainCodeEditor
    return cls(value=value, height=height)
