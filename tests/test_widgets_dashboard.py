"""Dashboard without a browser: click Start/Pause/Resume/Stop, set controls, read the figure.

The figure's numbers are the run log's; hyperparameters land between steps through
trainer.update (validated; refused values leave the config alone) and show as event lines; the
training thread pauses, resumes and stops on the buttons.
"""

import json
import time

import pytest

import labkit as lk
from labkit.plots.live import COLS, PANELS, ROWS, live_figure
from labkit.widgets import Dashboard


def _trainer(**kw):
    return lk.GRPOTrainer(
        num_generations=2, prompts_per_step=2, diagnostics=0, **{"max_steps": 50, **kw}
    )


def _until(cond, timeout=120.0):
    end = time.time() + timeout
    while not cond():
        assert time.time() < end, "timed out"
        time.sleep(0.02)


def _json_safe(fig):
    state = {k: v for k, v in fig.get_state().items() if not isinstance(v, bytes | memoryview)}
    json.dumps(state, allow_nan=False, default=str)


def test_start_trains_in_the_background_and_draws_the_log():
    tr = _trainer()
    d = Dashboard(tr, steps=3)
    d.start_btn.click()
    assert d.wait(120)
    m = tr.log.metrics
    assert list(d.fig.data[0].x) == [1, 2, 3]
    assert list(d.fig.data[0].y) == pytest.approx(m["reward/mean"].tolist())
    k3 = next(t for t in d.fig.data if t.name == "k3")
    assert list(k3.y) == pytest.approx(m["kl/k3"].tolist())
    assert d.progress.value == 3 and d.progress.max == 3
    assert d.status.value.startswith("finished · step 3")
    last = tr.log.samples[lambda s: (s["step"] == 3) & (s["group"] == 0)]
    assert "step 3, group 0" in d.table.value
    for c in last["completion"]:
        assert repr(c).replace("'", "&#x27;") in d.table.value
    _json_safe(d.fig)


def test_controls_go_through_trainer_update_and_are_marked():
    tr = _trainer()
    d = Dashboard(tr, steps=1)
    d.run()
    d.controls["beta"].value = 0.05
    d.controls["loss_type"].value = "grpo"
    d.controls["epsilon_high"].value = "0.28"
    d.controls["learning_rate"].value = 3e-4
    d.apply_btn.click()
    c = tr.config
    assert (c.beta, c.loss_type, c.epsilon_high, c.learning_rate) == (0.05, "grpo", 0.28, 3e-4)
    assert "applied: beta=0.05" in d.message.value
    ev = tr.log.events.iloc[-1]
    assert ev["step"] == 1 and ev["beta"] == 0.05
    assert len(d.fig.layout.shapes) == ROWS * COLS and d.fig.layout.shapes[0].x0 == 1.5
    assert any("beta=0.05" in (a.text or "") for a in d.fig.layout.annotations)
    d.controls["epsilon"].value = -1.0
    d.apply_btn.click()
    assert "not applied: epsilon=-1.0" in d.message.value and tr.config.epsilon == 0.2
    assert len(tr.log.events) == 1  # a refused change is not logged
    d.run(1)
    assert tr.log.metrics["loss/kl"].iloc[-1] != 0.0  # beta > 0 now enters the loss


def test_pause_resume_stop_drive_the_thread():
    tr = _trainer(max_steps=500)
    d = Dashboard(tr, steps=500)
    d.start_btn.click()
    _until(lambda: tr.global_step >= 1)
    d.pause_btn.click()
    for _ in range(2):  # twice: a step that slipped in between the loop's check and the lock
        _until(lambda: not tr.lock.locked())  # the step in progress ends
        time.sleep(0.2)
    paused_at = tr.global_step
    time.sleep(0.6)
    assert tr.global_step == paused_at and d.running
    assert d.status.value.startswith("paused")
    d.controls["temperature"].value = 0.7
    d.apply_btn.click()  # applied while paused: between two steps
    assert tr.log.events.iloc[-1]["step"] == paused_at
    d.resume_btn.click()
    _until(lambda: tr.global_step >= paused_at + 2)
    d.start_btn.click()  # a second Start while running is refused
    assert "already running" in d.message.value
    d.stop_btn.click()
    assert not d.running and d.status.value.startswith("stopped")
    stopped_at = tr.global_step
    time.sleep(0.3)
    assert tr.global_step == stopped_at < 500
    assert list(d.fig.data[0].x)[-1] == stopped_at  # the last step is drawn


def test_start_past_max_steps_extends_the_schedule():
    tr = _trainer(max_steps=2)
    d = Dashboard(tr, steps=3)
    d.start_btn.click()
    d.wait(120)
    assert tr.config.max_steps == 3 and tr.global_step == 3
    assert tr.log.metrics["lr"].iloc[-1] > 0  # the linear schedule did not sit at 0


def test_a_reward_error_inside_the_run_is_shown_and_the_log_kept():
    def broken(completions, **kwargs):
        raise KeyError("answer_text")

    tr = _trainer()
    d = Dashboard(tr, steps=5)
    d.run(1)
    tr.update(reward_funcs=[broken])
    d.run(2)
    assert "training stopped at step 1" in d.message.value and "KeyError" in d.message.value
    assert len(tr.log.metrics) == 1 and not d.running


def test_the_run_doctor_panel_names_a_fault_when_the_run_ends():
    tr = _trainer(max_completion_length=1)  # every completion cut: truncation
    d = Dashboard(tr, steps=2)
    assert d.doctor.value == ""  # nothing before the first step
    d.run(2)
    assert "Run doctor" in d.doctor.value and "truncation" in d.doctor.value
    # and on the figure, in the corner of the panel that draws truncation (row 2, col 3)
    notes = {a.xref: a for a in d.fig.layout.annotations if (a.text or "").startswith("⚠")}
    note = notes["x6 domain"]
    assert note.text == "⚠ truncation"
    assert "zero_spread" in notes["x4 domain"].text  # beside "why is my loss zero?"
    assert "len/truncated_frac" in note.hovertext and "max_completion_length" in note.hovertext


def _rows(funcs):
    keys = [k for _, ks in PANELS for k in ks] + [f"rewards/{f}/mean" for f in funcs]
    return [{"step": s, **{k: 0.1 * s for k in keys}} for s in (1, 2, 3)]


def test_one_legend_per_panel_a_fixed_colour_per_quantity_and_step_on_hover():
    run_a = live_figure(_rows(["fmt", "acc"]))
    run_b = live_figure(_rows(["acc"]))  # another run, other reward functions
    for fig in (run_a, run_b):
        legends = {t.legend or "legend" for t in fig.data}
        assert legends == {"legend"} | {f"legend{i}" for i in range(2, ROWS * COLS + 1)}
        for t in fig.data:  # each trace in its own panel's legend, and its hover says the step
            panel = "" if t.xaxis in (None, "x") else t.xaxis[1:]
            assert (t.legend or "legend") == f"legend{panel}", t.name
            assert "step %{x}" in t.hovertemplate and "%{y" in t.hovertemplate
        by_panel = {}
        for t in fig.data:
            by_panel.setdefault(t.legend, []).append(t.line.color)
        assert all(len(set(c)) == len(c) for c in by_panel.values())  # distinct within a panel
        for key in ("legend2", "legend3", "legend4"):  # inside the figure, at its panel
            assert fig.layout[key].x is not None and fig.layout[key].yanchor == "top"
    color = {
        fig_id: {t.name: t.line.color for t in f.data} for fig_id, f in (("a", run_a), ("b", run_b))
    }
    assert color["a"]["acc"] == color["b"]["acc"] and color["a"]["k3"] == color["b"]["k3"]
    titles = [a.text for a in run_a.layout.annotations]
    assert "KL to π_ref (nats/token)" in titles and "completion length (tokens)" in titles


def test_the_status_line_leaves_out_an_accuracy_nobody_measured():
    """A run without a verifier logs accuracy as None (a TRL dataset with no verifier)."""
    d = Dashboard(_trainer(), steps=1)
    d._status({"reward/mean": 0.5, "accuracy": None})
    assert d.status.value.endswith("reward 0.500") and "accuracy" not in d.status.value
    d._status({"reward/mean": 0.5, "accuracy": 0.25})
    assert d.status.value.endswith("accuracy 0.25")
