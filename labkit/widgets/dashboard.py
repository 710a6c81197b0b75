"""``Dashboard(trainer)``: start, pause, resume, stop a GRPO run and watch it, live.

Training runs in a background thread (``trainer.train`` with a callback), so the kernel keeps
handling clicks while it goes. Hyperparameter changes go through ``trainer.update``, which takes
the trainer's lock, so they land between two steps and are logged as events (dotted lines on the
figure). One figure holds all panels (:class:`labkit.widgets.live.LiveFigure`); the run doctor's
warnings go on the panels they concern, its full table below. Widgets carry ``lk-*`` CSS
classes so a browser test can find them.
"""

from __future__ import annotations

import html
import threading
import time

import ipywidgets as W

from labkit.core.options import LOSS_TYPES
from labkit.runs.diagnose import diagnose
from labkit.widgets.frontend import place
from labkit.widgets.live import LiveFigure
from labkit.widgets.tables import samples_html

DOCTOR_EVERY = 10
"""Steps between two redraws of the run doctor's panel while training."""
HPARAMS = ("beta", "epsilon", "epsilon_high", "temperature", "loss_type", "learning_rate")


def _button(label: str, cls: str, style: str = "") -> W.Button:
    b = W.Button(description=label, button_style=style, layout={"width": "90px"})
    b.add_class(cls)
    return b


def _float(label: str, value, cls: str) -> W.FloatText:
    w = W.FloatText(
        value=value,
        description=label,
        layout={"width": "190px"},
        style={"description_width": "90px"},
    )
    w.add_class(cls)
    return w


class Dashboard(W.VBox):
    """Controls, one live figure, the latest group's completions and a progress bar.

    ``steps``: how many steps Start trains (default: the config's ``max_steps``).
    ``every``: redraw after every ``every`` steps (1: each step). ``budget``: a redraw is also
    skipped while the last one took more than this fraction of the time since it (a long
    history must not slow training; the final state is always drawn).
    """

    def __init__(self, trainer, steps: int | None = None, every: int = 1, budget: float = 0.05):
        self.trainer, self.every, self.budget = trainer, max(1, int(every)), budget
        self._draw_cost, self._drawn_at = 0.0, 0.0
        self.thread: threading.Thread | None = None
        self.live = LiveFigure(trainer.log)
        self.fig = self.live.fig
        self.start_btn, self.pause_btn = (
            _button("Start", "lk-start", "success"),
            _button("Pause", "lk-pause", "warning"),
        )
        self.resume_btn, self.stop_btn = (
            _button("Resume", "lk-resume", "info"),
            _button("Stop", "lk-stop", "danger"),
        )
        self.steps = W.BoundedIntText(
            value=steps or trainer.config.max_steps,
            min=1,
            max=10**6,
            description="steps",
            layout={"width": "160px"},
        )
        self.steps.add_class("lk-steps")
        self.controls = self._controls()
        self.apply_btn = _button("Apply", "lk-apply-hparams", "primary")
        self.message = W.HTML()
        self.message.add_class("lk-message")
        self.progress = W.IntProgress(value=0, min=0, max=1, layout={"width": "300px"})
        self.progress.add_class("lk-progress")
        self.status = W.HTML("idle")
        self.status.add_class("lk-status")
        self.table = W.HTML()
        self.table.add_class("lk-samples")
        self.doctor = W.HTML()  # the run doctor (labkit.runs.diagnose), every DOCTOR_EVERY steps
        self.doctor.add_class("lk-doctor")
        self._doctor_at = -1
        for b, fn in [
            (self.start_btn, self.start),
            (self.pause_btn, self.pause),
            (self.resume_btn, self.resume),
            (self.stop_btn, self.stop),
            (self.apply_btn, self.apply),
        ]:
            b.on_click(lambda _, fn=fn: fn())
        box = W.VBox([place(self.fig)])
        box.add_class("lk-figure")
        super().__init__(
            [
                W.HBox(
                    [
                        self.start_btn,
                        self.pause_btn,
                        self.resume_btn,
                        self.stop_btn,
                        self.steps,
                        self.progress,
                        self.status,
                    ]
                ),
                W.HBox([*self.controls.values(), self.apply_btn]),
                self.message,
                box,
                self.table,
                self.doctor,
            ]
        )
        self.add_class("lk-dashboard")
        self._last_draw, self._target, self._ended = 0, trainer.global_step, "idle"
        self.refresh()

    def _controls(self) -> dict:
        c = self.trainer.config
        loss = W.Dropdown(
            options=LOSS_TYPES,
            value=c.loss_type,
            description="loss type",
            layout={"width": "190px"},
            style={"description_width": "70px"},
        )
        loss.add_class("lk-loss_type")
        eh = W.Text(
            value="" if c.epsilon_high is None else str(c.epsilon_high),
            description="ε high",
            placeholder="= ε",
            layout={"width": "150px"},
            style={"description_width": "60px"},
        )
        eh.add_class("lk-epsilon_high")
        return {
            "beta": _float("β (KL)", c.beta, "lk-beta"),
            "epsilon": _float("ε (clip)", c.epsilon, "lk-epsilon"),
            "epsilon_high": eh,
            "temperature": _float("temperature", c.temperature, "lk-temperature"),
            "loss_type": loss,
            "learning_rate": _float("learning rate", c.learning_rate, "lk-learning_rate"),
        }

    # -- controls --------------------------------------------------------------------------
    def changes(self) -> dict:
        """The controls' values that differ from the trainer's config."""
        out = {}
        for k, w in self.controls.items():
            v = w.value
            if k == "epsilon_high":
                v = float(v) if v.strip() else None
            if v != getattr(self.trainer.config, k):
                out[k] = v
        return out

    def apply(self) -> dict:
        """Send the changed controls to ``trainer.update`` (lands between steps, logged)."""
        try:
            changes = self.changes()
            if changes:
                self.trainer.update(**changes)
        except ValueError as e:  # bad value: the message names the field and the fix
            self._say(f"not applied: {e}", error=True)
            return {}
        self._say(
            "applied: " + ", ".join(f"{k}={v}" for k, v in changes.items())
            if changes
            else "nothing changed"
        )
        self.refresh()
        return changes

    def _say(self, text: str, error: bool = False) -> None:
        color = "#b00020" if error else "#1b5e20"
        self.message.value = f"<span style='color:{color}'>{html.escape(text)}</span>"

    # -- the run ---------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def start(self) -> None:
        """Train ``steps`` more steps in a background thread."""
        if self.running:
            self._say("already running (Pause/Resume/Stop it)", error=True)
            return
        tr = self.trainer
        tr.stop_event.clear()
        tr.pause_event.clear()
        n = int(self.steps.value)
        self._target = tr.global_step + n
        if self._target > tr.config.max_steps:  # the linear schedule would sit at lr = 0
            tr.update(max_steps=self._target)
            self._say(f"max_steps -> {self._target} so the learning-rate schedule runs on")
        self.progress.max = self._target  # max first: min may not exceed max
        self.progress.min = tr.global_step
        self.thread = threading.Thread(
            target=self._train, args=(n,), daemon=True, name="labkit-dashboard"
        )
        self._ended = "running"
        self.thread.start()
        self._status()

    def _train(self, n: int) -> None:
        try:
            self.trainer.train(max_steps=n, progress=False, callback=self._on_step)
        except Exception as e:  # noqa: BLE001 - e.g. a failing reward: shown, log kept
            self._say(f"training stopped at step {self.trainer.global_step}: {e}", error=True)
        finally:
            self._ended = "stopped" if self.trainer.stop_event.is_set() else "finished"
            self.refresh()

    def _on_step(self, trainer, metrics: dict) -> None:
        waited = time.perf_counter() - self._drawn_at
        if (
            trainer.global_step - self._last_draw >= self.every
            and self._draw_cost <= self.budget * waited
        ):
            self.refresh()

    def pause(self) -> None:
        self.trainer.pause()
        self._status()

    def resume(self) -> None:
        self.trainer.resume()
        self._status()

    def stop(self) -> None:
        self.trainer.stop()
        self.trainer.resume()  # a paused loop must wake up to see the stop
        if self.wait(30):
            self._ended = "stopped"
        self._status()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the training thread ends (True) or ``timeout`` seconds pass (False)."""
        if self.thread is not None:
            self.thread.join(timeout)
        return not self.running

    def run(self, steps: int | None = None) -> None:
        """Start and wait: a blocking run whose figure still updates live (for scripts/CI)."""
        if steps is not None:
            self.steps.value = steps
        self.start()
        self.wait()

    # -- drawing ---------------------------------------------------------------------------
    def refresh(self) -> None:
        """Redraw the figure, the latest group's table, the progress bar and the status."""
        t0 = time.perf_counter()
        self._last_draw = self.trainer.global_step
        self._diagnose()  # first: its warnings go into this redraw of the figure
        self.live.refresh()
        log = self.trainer.log
        with log.lock:
            samples = log.records["samples"]
            step = samples[-1]["step"] if samples else None
            group = []
            for r in reversed(samples):  # the last step's rows are at the end
                if r["step"] != step:
                    break
                if r["group"] == 0:
                    group.append(r)
            last = log.records["metrics"][-1] if log.records["metrics"] else None
        if group:
            group.reverse()
            cols = [k for k in group[0] if k.startswith("rewards/")]
            self.table.value = f"<b>step {step}, group 0</b>" + samples_html(group, cols)
        self.progress.value = min(self.trainer.global_step, self.progress.max)
        self._status(last)
        self._drawn_at = time.perf_counter()
        self._draw_cost = self._drawn_at - t0

    def _diagnose(self) -> None:
        """The run doctor's findings, redrawn every DOCTOR_EVERY steps and when a run ends (it
        reads the whole log: not every step)."""
        s = self.trainer.global_step
        if s == self._doctor_at or (
            self._ended == "running" and s - self._doctor_at < DOCTOR_EVERY
        ):
            return
        self._doctor_at = s
        found = diagnose(self.trainer.log) if s else []
        self.doctor.value = found._repr_html_() if s else ""
        self.live.set_findings(found)

    def state(self) -> str:
        """'running', 'paused', or how the last run ended ('idle' before any)."""
        if self._ended == "running":
            return "paused" if self.trainer.pause_event.is_set() else "running"
        return self._ended

    def _status(self, last: dict | None = None) -> None:
        tr, state = self.trainer, self.state()
        if last is None:
            with tr.log.lock:
                last = tr.log.records["metrics"][-1] if tr.log.records["metrics"] else None
        tail = ""
        if last is not None:
            acc = last.get("accuracy")  # None: no verifier (a TRL dataset without one)
            tail = f" · step {tr.global_step} · reward {last['reward/mean']:.3f}"
            tail += "" if acc is None else f" · accuracy {acc:.2f}"
        self.status.value = state + tail
