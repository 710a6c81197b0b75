"""``RewardEditor``: write a reward function, try it on cached completions, swap it into a run.

The code box is a :class:`labkit.widgets.code_editor.CodeEditor` (Python highlighting, line
numbers, auto-indent; Ctrl+Enter or Shift+Enter runs "Try"; the line a syntax error or a
traceback names is marked). Before any Try the figures show the bank as the run itself scored
it (its own reward, histogram and zero-spread groups), so nothing is blank. "Try" compiles the
code box, runs the function on a bank of completions (the trainer's latest
samples, a saved run's, or a list you pass) with a time limit, and shows the reward histogram,
the advantages it would produce, the fraction of groups with zero spread, and the best and
worst examples. Every failure is one readable message in the widget (see
:mod:`labkit.widgets.sandbox`). "Apply" (after a successful Try of the same code) calls
``trainer.update(reward_funcs=[fn])``, which lands between steps and is logged as an event, so
the dashboard marks the switch. The applied function stays guarded: if it later fails inside
the run, the failing step scores None (no signal), the trainer pauses and the message shows
here; the training thread never sees the exception.
"""

from __future__ import annotations

import functools
import html

import ipywidgets as W
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from labkit.rewards import RewardError
from labkit.rewards.bench import reward_bench
from labkit.rewards.runtime import RewardRunner
from labkit.widgets.code_editor import code_input
from labkit.widgets.frontend import figure_widget, place
from labkit.widgets.sandbox import (
    Bank,
    bank_from_samples,
    compile_reward,
    error_line,
    evaluate_reward,
    safe_call,
    score_bank,
)
from labkit.widgets.tables import examples_html

DEFAULT_CODE = '''def my_reward(completions, answer, **kwargs):
    """1 for the right number, 0.5 for the right last digit."""
    out = []
    for c, a in zip(completions, answer):
        c = c.strip()
        out.append(1.0 if c == a else 0.5 if c[-1:] == a[-1:] else 0.0)
    return out
'''


def editor_figure() -> go.Figure:
    """The editor's two histograms: rewards on the bank, and the advantages they would give."""
    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("reward per completion", "advantage it would give (group z-score)"),
        horizontal_spacing=0.1,
    )
    fig.add_histogram(x=[], name="reward", row=1, col=1, marker_color="#1f77b4")
    fig.add_histogram(x=[], name="advantage", row=1, col=2, marker_color="#ff7f0e")
    fig.update_yaxes(title_text="completions", row=1, col=1)
    fig.update_xaxes(title_text="reward", row=1, col=1)
    fig.update_xaxes(title_text="advantage", row=1, col=2)
    fig.update_layout(
        width=880,  # inside the tab's padding at 1366 x 768 (see labkit.widgets.live.WIDTH)
        height=300,
        showlegend=False,
        bargap=0.05,
        title={"text": "", "font": {"size": 13}, "x": 0.01, "y": 0.98},
        margin={"t": 60, "b": 45, "l": 55, "r": 10},
    )
    return fig


def summary(name: str, result: dict) -> str:
    """One line: how many completions and groups, the mean reward, the zero-spread share."""
    r = result["rewards"]
    return (
        f"{name}: {len(r)} completions, {result['groups']} groups; mean reward "
        f"{sum(r) / len(r):.3f}; groups with zero spread (no signal): "
        f"{result['frac_zero_spread']:.0%}"
    )


class RewardEditor(W.VBox):
    """A code box, Try and Apply buttons, a message line, one figure and example tables.

    ``source``: a trainer (its latest samples form the bank; Apply swaps into it), a RunLog
    (a saved run: Try only), or a :class:`Bank`. ``dashboard``: redrawn after Apply.
    """

    def __init__(
        self,
        source=None,
        code: str = DEFAULT_CODE,
        timeout: float = 2.0,
        dashboard=None,
        max_samples: int = 512,
    ):
        self.trainer = source if hasattr(source, "update") else None
        self.source, self.timeout, self.dashboard = source, timeout, dashboard
        self.max_samples = max_samples
        self.code = code_input(code)
        self.code.add_class("lk-reward-code")
        self.code.on_run(self.try_code)
        self.try_btn = W.Button(description="Try", button_style="primary")
        self.try_btn.add_class("lk-try")
        self.apply_btn = W.Button(
            description="Apply to run", button_style="success", disabled=self.trainer is None
        )
        self.apply_btn.add_class("lk-apply-reward")
        self.message = W.HTML()
        self.message.add_class("lk-reward-message")
        self.stats = W.HTML()
        self.stats.add_class("lk-reward-stats")
        self.examples = W.HTML()
        self.examples.add_class("lk-examples")
        self.fig = figure_widget(editor_figure())
        self.try_btn.on_click(lambda _: self.try_code())
        self.apply_btn.on_click(lambda _: self.apply())
        self.fn, self._tried_code, self.result = None, None, None
        self.tabs = self._tabs()
        super().__init__(
            [self.code, W.HBox([self.try_btn, self.apply_btn]), self.message, self.tabs]
        )
        self.add_class("lk-reward-editor")
        self.show_cached()

    def _tabs(self) -> W.Tab:
        """The tabs: "Try on the bank" (summary, figure, examples), "Reward bench" (its table)."""
        self.bench_btn = W.Button(description="Run the bench", button_style="info")
        self.bench_btn.add_class("lk-bench")
        self.bench_out = W.HTML()  # lk.reward_bench's flagged table
        self.bench_out.add_class("lk-bench-table")
        self.bench_btn.on_click(lambda _: self.bench())
        tabs = W.Tab(
            [
                W.VBox([self.stats, place(self.fig), self.examples]),
                W.VBox([self.bench_btn, self.bench_out]),
            ]
        )
        tabs.titles = ("Try on the bank", "Reward bench")
        tabs.add_class("lk-reward-tabs")
        return tabs

    def bank(self) -> Bank:
        """The completions Try runs on (re-read each time: a live run keeps adding)."""
        src = self.source
        if isinstance(src, Bank):
            return src
        if self.trainer is not None:
            return bank_from_samples(src.log.samples, self.max_samples, src.config.scale_rewards)
        if hasattr(src, "samples"):
            return bank_from_samples(
                src.samples, self.max_samples, src.config.get("scale_rewards", "group")
            )
        raise ValueError("RewardEditor needs a trainer, a RunLog or a Bank as its source")

    def _say(self, text: str, error: bool = False) -> None:
        cls, color = ("lk-error", "#b00020") if error else ("lk-ok", "#1b5e20")
        self.message.value = f"<span class='{cls}' style='color:{color}'>{html.escape(text)}</span>"

    def current_reward(self) -> str:
        """The names of the reward functions the source's completions were scored by."""
        if self.trainer is not None:
            names = self.trainer.scorer.names
        else:
            names = (getattr(self.source, "config", None) or {}).get("reward_funcs") or []
        return " + ".join(map(str, names)) or "the run's reward"

    def show_cached(self) -> dict | None:
        """Draw the bank as the run scored it (before any Try); None when there is nothing."""
        try:
            bank = self.bank()
        except ValueError as e:  # no step yet
            self.stats.value = f"<i>{html.escape(str(e))}; then write a reward and Try it</i>"
            return None
        if bank.rewards is None:
            self.stats.value = "<i>write a reward and press Try</i>"
            return None
        result = score_bank(bank, bank.rewards)
        line = summary(f"as the run scored them ({self.current_reward()})", result)
        self._draw(bank, result, f"before Try: the run's own reward, {self.current_reward()}")
        self.stats.value = f"<i>{html.escape(line)}</i>"
        return result

    def _draw(self, bank: Bank, result: dict, title: str) -> None:
        with self.fig.batch_update():
            self.fig.data[0].x = result["rewards"]
            self.fig.data[1].x = result["advantages"]
            self.fig.layout.title.text = html.escape(title)
        self.examples.value = examples_html(bank, result)

    def try_code(self) -> dict | None:
        """Compile and run the code box on the bank; draw; return the result (None: failed).
        A failure marks the line of the code it names (a syntax error, a traceback's frame)."""
        self.fn, self.result, self._tried_code = None, None, None
        try:
            bank = self.bank()
            fn = compile_reward(self.code.value)
            result = evaluate_reward(fn, bank, self.timeout, self.runner())
        except (RewardError, ValueError) as e:
            line = error_line(e)
            self.code.mark_error(line, str(e))
            self._say(f"✗ {e}" + (f" (line {line} is marked)" if line else ""), error=True)
            return None
        self.code.mark_error(None)
        self.fn, self.result, self._tried_code = fn, result, self.code.value
        self._draw(
            bank, result, f"Try: {fn.__name__} on {len(bank.completions)} cached completions"
        )
        line = summary(fn.__name__, result)
        self._say(f"✓ {line}")
        self.stats.value = f"<i>last Try: {html.escape(line)}</i>"
        return result

    def runner(self) -> RewardRunner:
        """One worker process per function for Try and training alike (state a function keeps
        lives there across calls); rebuilt when ``timeout`` changes."""
        run = getattr(self, "_runner", None)
        if run is None or run.timeout != self.timeout:
            if run is not None:
                run.close()
            self._runner = RewardRunner(timeout=self.timeout, mode="process")
        return self._runner

    def bench(self):
        """Compile the code box and run :func:`labkit.rewards.bench.reward_bench` on it (the
        trainer's task, else the run's, else addition); the table goes in the bench tab."""
        task = "addition"
        if self.trainer is not None:
            task = self.trainer.task
        elif isinstance(getattr(self.source, "config", None), dict):
            task = self.source.config.get("task") or task
        try:
            result = reward_bench(compile_reward(self.code.value), task=task, timeout=self.timeout)
        except (RewardError, ValueError) as e:
            self.code.mark_error(error_line(e), str(e))
            self._say(f"✗ {e}", error=True)
            return None
        flagged = result.table[result.table["flag"] != ""]
        shown = flagged if len(flagged) else result.table.head(12)
        self.bench_out.value = f"<b>{html.escape(repr(result))}</b>" + shown.to_html(index=False)
        self._say(f"{'✓' if result.ok else '✗'} {result!r}", error=not result.ok)
        return result

    def guarded(self, fn):
        """``fn`` wrapped for the training thread: time-limited and checked; a failure pauses the
        trainer, shows here, and gives the step None rewards instead of an exception."""

        @functools.wraps(fn)
        def reward(completions, **columns):
            try:
                return safe_call(fn, completions, columns, self.timeout, self.runner())
            except RewardError as e:
                if self.trainer is not None:
                    self.trainer.pause()
                self.code.mark_error(error_line(e), str(e))
                self._say(
                    f"✗ during training (trainer paused; this step got no reward): {e}", error=True
                )
                return [None] * len(completions)

        reward.labkit_inline = True  # it pauses the trainer and writes here: this process
        return reward

    def apply(self) -> bool:
        """Swap the tried function into the trainer between steps (logged as an event)."""
        if self.trainer is None:
            self._say("✗ no trainer to apply to: create RewardEditor(trainer)", error=True)
            return False
        if self.fn is None or self._tried_code != self.code.value:
            self._say(
                "✗ press Try first: only code that ran cleanly on the bank is applied", error=True
            )
            return False
        extra = {} if self.trainer.config.reward_weights is None else {"reward_weights": None}
        try:
            self.trainer.update(reward_funcs=[self.guarded(self.fn)], **extra)
        except ValueError as e:
            self._say(f"✗ not applied: {e}", error=True)
            return False
        self._say(f"✓ applied {self.fn.__name__} after step {self.trainer.global_step}")
        if self.dashboard is not None:
            self.dashboard.refresh()
        return True
