"""The completion browser: every completion of a run in an itables table, filtered and paged
from the run files (``labkit.runs.browse``); one prompt followed across steps; a selected row
opens its per-token view (when the step recorded one)."""

from __future__ import annotations

import html
import re

import ipywidgets as W
from itables.widget import ITable

from labkit.plots.run_step import token_heatmap
from labkit.plots.tools import episode_tokens
from labkit.runs.browse import CompletionIndex
from labkit.widgets.frontend import figure_widget, place

_ANY = {"any": None, "yes": True, "no": False}


def _range(label: str, lo: float, hi: float, cls: str, ints: bool) -> W.Widget:
    kind = W.IntRangeSlider if ints else W.FloatRangeSlider
    w = kind(
        value=(lo, hi),
        min=lo,
        max=max(hi, lo + 1),
        description=label,
        continuous_update=False,
        layout={"width": "360px"},
    )
    w.add_class(cls)
    return w


class CompletionBrowser(W.VBox):
    """``CompletionBrowser(run, page_size=50)``: filters, a page of completions, a token view.

    ``run``: a RunLog on disk, a run folder or a run name. The table shows ``page_size`` rows;
    Next/Previous page through the rows passing the filters.
    """

    def __init__(self, run, page_size: int = 50):
        self.index, self.page_size = CompletionIndex(run), page_size
        f = self.index.frame
        self.steps = _range("steps", int(f["step"].min()), int(f["step"].max()), "lk-steps", True)
        r = f["reward"].dropna()
        self.reward = _range(
            "reward",
            float(r.min()) if len(r) else 0.0,
            float(r.max()) if len(r) else 1.0,
            "lk-reward",
            False,
        )
        n = f["length"].dropna()
        self.length = _range(
            "length",
            int(n.min()) if len(n) else 0,
            int(n.max()) if len(n) else 1,
            "lk-length",
            True,
        )
        self.correct = W.Dropdown(options=list(_ANY), description="correct")
        self.truncated = W.Dropdown(options=list(_ANY), description="truncated")
        self.regex = W.Text(placeholder="regex over the completion", description="regex")
        self.prompt = W.Text(
            placeholder="exact prompt: follow it across steps", description="prompt"
        )
        self.prev_btn, self.next_btn = (
            W.Button(description="◀ Previous"),
            W.Button(description="Next ▶"),
        )
        self.info = W.HTML()
        self.info.add_class("lk-browser-info")
        self.table = ITable(caption="completions", select=True)
        self.tokens = W.VBox()  # the selected row's per-token heatmap
        self.tokens.add_class("lk-browser-tokens")
        for w in (
            self.steps,
            self.reward,
            self.length,
            self.correct,
            self.truncated,
            self.regex,
            self.prompt,
        ):
            w.observe(lambda _: self.apply(), names="value")
        self.prev_btn.on_click(lambda _: self.previous())
        self.next_btn.on_click(lambda _: self.next())
        self.table.observe(lambda ch: self.open_tokens(), names="selected_rows")
        super().__init__(
            [
                W.HBox([self.steps, self.reward]),
                W.HBox([self.length, self.correct, self.truncated]),
                W.HBox([self.regex, self.prompt]),
                W.HBox([self.prev_btn, self.next_btn, self.info]),
                self.table,
                self.tokens,
            ]
        )
        self.add_class("lk-completion-browser")
        self.apply()

    def apply(self) -> None:
        """Re-select the rows from the filters and show the first page."""
        self.rows = self.index.select(
            steps=self.steps.value,
            reward=self.reward.value,
            length=self.length.value,
            correct=_ANY[self.correct.value],
            truncated=_ANY[self.truncated.value],
            prompt=self.prompt.value or None,
        )
        self._starts = [0]  # where each page shown so far began: Previous pops
        self.show(0)

    def next(self) -> None:
        if self._next < len(self.rows):
            self._starts.append(self._next)
            self.show(self._next)

    def previous(self) -> None:
        if len(self._starts) > 1:
            self._starts.pop()
            self.show(self._starts[-1])

    def show(self, start: int) -> None:
        """The page of the selected rows from ``start``."""
        try:
            self.frame, self._next = self.index.page(
                self.rows, start, self.page_size, self.regex.value or None
            )
        except re.error as e:  # a regex being typed: say so, keep the table
            self.info.value = f"<span style='color:#b00020'>regex: {html.escape(str(e))}</span>"
            return
        self.table.update(df=self.frame, selected_rows=[])
        self.info.value = (
            f"{len(self.rows)} of {len(self.index)} completions pass the "
            f"filters; this page: {len(self.frame)} rows from {start}"
        )

    def open_tokens(self) -> None:
        """The per-token view of the selected row, or why there is none."""
        sel = self.table.selected_rows
        if not sel or not len(self.frame):
            self.tokens.children = []
            return
        r = self.frame.iloc[sel[0]]
        step, sample = int(r["step"]), int(r["sample"])
        run = self.index.tokens(step, sample)
        if run is None:
            self.tokens.children = [
                W.HTML(
                    f"step {step}, completion {sample}: no per-token "
                    "record (only the first `diagnostics` completions "
                    "of a step have one)"
                )
            ]
        elif "env_mask" in run.tokens:  # a multi-turn episode: who wrote each token too
            self.tokens.children = [
                place(figure_widget(episode_tokens(run, step, sample))),
                place(figure_widget(token_heatmap(run, step, sample))),
            ]
        else:
            self.tokens.children = [place(figure_widget(token_heatmap(run, step, sample)))]
