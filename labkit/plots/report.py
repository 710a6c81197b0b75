"""A static HTML report of a run: the figures of labkit.plots on one offline page."""

from __future__ import annotations

import html
import pathlib

from labkit.plots import run_step, training


def report_figures(run) -> list:
    """The report's figures: curves over steps (events marked), then the last step in detail
    (advantages under each scheme, one completion token by token, token weights)."""
    figs = [
        training.reward_curve(run),
        training.loss_zero_panel(run),
        training.kl_curve(run),
        training.length_curve(run),
        training.length_distribution(run),
        training.clip_curve(run),
        training.entropy_curve(run),
        training.advantage_distribution(run),
    ]
    if len(run.samples):
        figs += [
            run_step.advantage_slider(run),
            run_step.advantage_schemes(run),
            run_step.step_token_weights(run),
        ]
    if len(run.tokens):
        figs += [run_step.token_heatmap(run), run_step.kl_tokens(run)]
    return figs


def report(run, path: str | None = None, summary: dict | None = None) -> pathlib.Path:
    """Write ``report.html`` (default: inside the run folder) and return its path.

    plotly.js is embedded once, so the page opens offline.
    """
    path = pathlib.Path(path) if path else pathlib.Path(run.path) / "report.html"
    figs = report_figures(run)
    parts = [f.to_html(full_html=False, include_plotlyjs=(i == 0)) for i, f in enumerate(figs)]
    rows = "".join(
        f"<tr><td>{html.escape(str(k))}</td><td>{html.escape(str(v))}</td></tr>"
        for k, v in (summary or {}).items()
    )
    events = run.events
    ev = (
        "".join(
            f"<li>after step {int(e['step'])}: {html.escape(training.event_label(e))}</li>"
            for e in events.to_dict("records")
        )
        if len(events)
        else ""
    )
    page = (
        f"<html><head><meta charset='utf-8'><title>labkit run {html.escape(run.name)}</title>"
        f"</head><body><h1>labkit run: {html.escape(run.name)}</h1><table>{rows}</table>"
        + (f"<h3>Changes during the run</h3><ul>{ev}</ul>" if ev else "")
        + "".join(parts)
        + "</body></html>"
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page)
    return path
