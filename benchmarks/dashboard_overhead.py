"""Dashboard cost: overhead per training step, and redraw time with a long history.

1. Overhead at one update per step: the same run (same seed and config) trained plainly and
   through ``Dashboard`` (figure, table, progress and status redrawn after every step). Reports
   the wall-time ratio and, less noisy, the time spent inside the redraws as a fraction of the
   training time, plus an upper bound that adds JSON-encoding the whole figure on every step (what
   a live frontend costs on top: without a browser the widget messages are not serialised).
2. Responsiveness: a RunLog of 2,000 steps x 64 samples (rows copied from a real run, 4 token
   records per step); times a full dashboard redraw, the static figures and a reward Try.

Timings on a shared machine are noisy (2-3x outliers): read the ratios, not the seconds.
Usage: OMP_NUM_THREADS=1 python benchmarks/dashboard_overhead.py [--steps 30] [--history 2000]
"""

from __future__ import annotations

import argparse
import copy
import time

import plotly.io as pio

import labkit as lk
from labkit.plots import run_step, training
from labkit.plots.report import report_figures
from labkit.runs.log import RunLog
from labkit.widgets import Dashboard, RewardEditor


def _trainer(args):
    return lk.GRPOTrainer(
        max_steps=10**6,
        seed=0,
        num_generations=args.G,
        prompts_per_step=args.prompts,
        diagnostics=4,
    )


def overhead(args) -> None:
    plain = _trainer(args)
    t0 = time.perf_counter()
    plain.train(max_steps=args.steps, progress=False)
    t_plain = time.perf_counter() - t0

    tr = _trainer(args)
    dash = Dashboard(tr, steps=args.steps)
    spent = {"refresh": 0.0, "json": 0.0, "n": 0}
    refresh = dash.refresh

    def timed_refresh():
        t = time.perf_counter()
        refresh()
        spent["n"] += 1
        spent["refresh"] += time.perf_counter() - t
        t = time.perf_counter()
        pio.to_json(dash.fig, validate=False)  # what a frontend's message would cost, at most
        spent["json"] += time.perf_counter() - t

    dash.refresh = timed_refresh
    t0 = time.perf_counter()
    dash.run()
    t_dash = time.perf_counter() - t0
    train_time = t_dash - spent["refresh"] - spent["json"]
    print(f"config: {args.prompts} prompts x {args.G} generations, {args.steps} steps")
    print(
        f"plain train: {t_plain:.2f} s ({t_plain / args.steps * 1e3:.0f} ms/step); "
        f"with dashboard: {t_dash - spent['json']:.2f} s -> wall ratio "
        f"{(t_dash - spent['json']) / t_plain:.3f} (noisy)"
    )
    print(
        f"redraw time inside the run: {spent['refresh']:.3f} s = "
        f"{spent['refresh'] / train_time:.1%} of training time "
        f"({spent['refresh'] / spent['n'] * 1e3:.1f} ms per update, {spent['n']} updates for "
        f"{args.steps} steps)"
    )
    print(
        f"+ JSON of the whole figure each step (upper bound of a live frontend's cost): "
        f"{(spent['refresh'] + spent['json']) / train_time:.1%}"
    )


def history_log(steps: int) -> tuple[RunLog, lk.GRPOTrainer]:
    """A RunLog of ``steps`` steps whose rows are copies of a real 4 x 16 run's (and that run)."""
    tr = lk.GRPOTrainer(max_steps=2, seed=0, num_generations=16, prompts_per_step=4, diagnostics=4)
    tr.train(progress=False)
    src = tr.log.records
    log = RunLog(None, tr.log.config)
    for s in range(1, steps + 1):
        k = (s - 1) % 2 + 1
        rows = {
            kind: [dict(r, step=s) for r in src[kind] if r["step"] == k]
            for kind in ("metrics", "samples", "tokens")
        }
        log.log_step(rows["metrics"][0], rows["samples"], rows["tokens"])
    return log, tr


def _time(label: str, fn, repeat: int = 3) -> None:
    best = min(_once(fn) for _ in range(repeat))
    print(f"{label:<55s} {best * 1e3:8.1f} ms")


def _once(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def responsiveness(args) -> None:
    log, tr = history_log(args.history)
    n = len(log.records["samples"])
    print(
        f"history: {len(log.records['metrics'])} steps, {n} samples, "
        f"{len(log.records['tokens'])} token records"
    )
    shell = copy.copy(tr)
    shell.log = log
    dash = Dashboard(shell, steps=1)
    _time("Dashboard.refresh (figure + table + status)", dash.refresh)
    _time("  + JSON of the whole figure", lambda: pio.to_json(dash.fig, validate=False))
    _time("training.reward_curve", lambda: training.reward_curve(log))
    _time("training.loss_zero_panel", lambda: training.loss_zero_panel(log))
    _time(
        "training.length_distribution (30 steps shown)", lambda: training.length_distribution(log)
    )
    _time("run_step.advantage_slider (40 steps shown)", lambda: run_step.advantage_slider(log))
    _time("run_step.token_heatmap (last step)", lambda: run_step.token_heatmap(log))
    _time("report_figures (all 13 figures)", lambda: report_figures(log), repeat=1)
    ed = RewardEditor(
        shell,
        code="def r(completions, answer, **kw):\n"
        "    return [float(c == a) for c, a in zip(completions, answer)]",
    )
    _time("RewardEditor Try (512-sample bank)", ed.try_code)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--prompts", type=int, default=16)
    ap.add_argument("-G", type=int, default=16)
    ap.add_argument("--history", type=int, default=2000)
    args = ap.parse_args()
    overhead(args)
    print()
    responsiveness(args)


if __name__ == "__main__":
    main()
