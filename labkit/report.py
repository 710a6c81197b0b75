"""A static HTML report of a run: the figures of labkit.plots on one offline page."""

from __future__ import annotations

import html
import pathlib

from labkit.plots.training import advantage_distribution, kl_curve, length_curve, reward_curve


def report(run, path: str | None = None, summary: dict | None = None) -> pathlib.Path:
    """Write ``report.html`` (default: inside the run folder) and return its path.

    plotly.js is embedded once, so the page opens offline.
    """
    path = pathlib.Path(path) if path else pathlib.Path(run.path) / "report.html"
    figs = [reward_curve(run), advantage_distribution(run), length_curve(run), kl_curve(run)]
    parts = [f.to_html(full_html=False, include_plotlyjs=(i == 0)) for i, f in enumerate(figs)]
    rows = "".join(f"<tr><td>{html.escape(str(k))}</td><td>{html.escape(str(v))}</td></tr>"
                   for k, v in (summary or {}).items())
    page = (f"<html><head><meta charset='utf-8'><title>labkit run {html.escape(run.name)}</title>"
            f"</head><body><h1>labkit run: {html.escape(run.name)}</h1><table>{rows}</table>"
            + "".join(parts) + "</body></html>")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page)
    return path
