"""A real client: JupyterLab on localhost, headless Chromium driven by Playwright, at a laptop's
1366 x 768.

Opens a copy of labs/00_quickstart.ipynb, runs all cells through JupyterLab's own command, checks
that the dashboard's figure has one legend per panel, clicks Start and sees the reward chart gain
points, pauses. In the reward editor: a CodeMirror editor with highlighted Python and line
numbers, figures already drawn from the run's own scores; types a reward with a syntax error
(Enter auto-indents), presses Try and sees the line marked; fixes it, presses Shift+Enter in the
editor and sees the histogram; applies it, resumes (the new reward function shows up as a trace
in the reward panel's legend and the switch as a line), stops. Screenshots go to runs/browser/.

Needs Debian's chromium at /usr/bin/chromium (``make test`` installs it when it can) and the
``playwright`` package (dev extra); otherwise the test is skipped, saying why.
"""

from __future__ import annotations

import shutil
import time

import pytest
from lab_server import ROOT, TOKEN, chromium_page, serve

ARTIFACTS = ROOT / "runs" / "browser"  # screenshots, not committed (runs/ is ignored)
# typed line by line without leading spaces: the editor's auto-indent supplies them
TYPED = [
    "def shaped(completions, answer, **kwargs):",
    "bonus = 0.5 +",  # line 2: a syntax error
    "return [float(c.strip() == a) + bonus for c, a in zip(completions, answer)]",
]

pytestmark = pytest.mark.slow


@pytest.fixture
def lab(tmp_path):
    """A JupyterLab server serving a copy of the quickstart; yields its URL."""
    with serve(tmp_path, [ROOT / "labs" / "00_quickstart.ipynb"]) as base:
        yield f"{base}/lab/tree/00_quickstart.ipynb?token={TOKEN}"


KERNEL_IDLE = """() => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.status === 'idle'; }"""
ALL_RAN = """() => { const w = window.jupyterapp.shell.currentWidget;
  const k = w.sessionContext.session.kernel;
  const cells = w.content.widgets.filter(c => c.model.type === 'code');
  return k.status === 'idle' && cells.every(c => c.model.executionCount !== null); }"""
ERRORS = """() => window.jupyterapp.shell.currentWidget.content.widgets
  .filter(c => c.model.type === 'code')
  .flatMap(c => c.model.sharedModel.outputs || [])
  .filter(o => o.output_type === 'error').map(o => o.ename + ': ' + o.evalue)"""
PLOT = "document.querySelector('.lk-dashboard .js-plotly-plot')"
EDITOR_PLOT = "document.querySelector('.lk-reward-editor .js-plotly-plot')"
LEGENDS = f"""() => {{ const p = {PLOT};
  const ids = [...p.querySelectorAll('g.infolayer > g')].map(g => g.getAttribute('class'))
    .filter(c => /^legend\\d*$/.test(c));
  const panelOf = t => t.legend || 'legend';
  const axisOf = t => 'legend' + (t.xaxis === 'x' ? '' : t.xaxis.slice(1));
  return {{ids, mismatched: p.data.filter(t => panelOf(t) !== axisOf(t)).map(t => t.name),
    entries: ids.map(id => [...p.querySelectorAll(`g.${{id}} .${{id}}text`)]
      .map(e => e.textContent))}}; }}"""
HIGHLIGHTED = """() => { const ed = document.querySelector('.lk-reward-editor .lk-code-editor');
  const line = ed.querySelector('.cm-line');
  const kw = [...ed.querySelectorAll('.cm-line span')].find(s => s.textContent === 'def');
  return {gutter: ed.querySelectorAll('.cm-lineNumbers .cm-gutterElement').length,
    plain: getComputedStyle(line).color, def: kw ? getComputedStyle(kw).color : null}; }"""
ERROR_LINE = """() => [...document.querySelectorAll('.lk-reward-editor .cm-lk-error-line')]
  .map(e => [e.getAttribute('data-error-line'), e.textContent])"""


def _points(page) -> int:
    """Points on the reward chart; -1 before the figure has its traces (plotly first draws an
    empty placeholder plot, then the widget's data)."""
    return page.evaluate(
        f"() => {{ const p = {PLOT}; const t = p && p.data && p.data[0];"
        " return t && t.x ? t.x.length : -1; }"
    )


def _shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=False)


def _wait_text(page, selector: str, text: str, timeout: float = 60_000) -> str:
    page.wait_for_function(
        "([s, t]) => { const e = document.querySelector(s); return e && e.innerText.includes(t); }",
        arg=[selector, text],
        timeout=timeout,
    )
    return page.inner_text(selector)


def _scroll_top(page, selector: str) -> None:
    """Scroll so that ``selector``'s element starts at the top of the notebook's view."""
    page.evaluate("s => document.querySelector(s).scrollIntoView({block: 'start'})", selector)
    time.sleep(0.3)


def _check_fits(page, plot: str) -> None:
    """The figure is drawn at its own width (not plotly's 700 px fallback) and fits the
    notebook's output area at 1366 x 768, file browser open: nothing scrolls sideways."""
    size = page.evaluate(
        f"() => {{ const p = {plot}; return [p._fullLayout.width,"
        " p.closest('.jp-OutputArea-output').clientWidth]; }"
    )
    assert 850 <= size[0] <= size[1], size


def _check_legends(page, extra: str | None = None) -> None:
    """One legend per panel, every trace in its own panel's legend."""
    legends = page.evaluate(LEGENDS)
    assert sorted(legends["ids"]) == sorted(["legend"] + [f"legend{i}" for i in range(2, 7)])
    assert legends["mismatched"] == [], legends
    kl = legends["entries"][legends["ids"].index("legend2")]
    assert kl == ["k1", "k2", "k3"], legends
    if extra:
        assert extra in legends["entries"][legends["ids"].index("legend")], legends


def _check_editor_opens_drawn(page) -> None:
    """A CodeMirror editor with line numbers and highlighted Python; figures before any Try."""
    page.locator(".lk-reward-editor .lk-code-editor .cm-editor").wait_for()
    page.wait_for_function(f"() => {{ const t = {EDITOR_PLOT}.data[0]; return !!t && !!t.x; }}")
    look = page.evaluate(HIGHLIGHTED)
    assert look["gutter"] >= 5, look  # DEFAULT_CODE's lines, numbered
    assert look["def"] is not None and look["def"] != look["plain"], look  # a coloured keyword
    drawn = page.evaluate(f"() => [{EDITOR_PLOT}.data[0].x.length, {EDITOR_PLOT}.layout.title]")
    assert drawn[0] > 0 and "before Try" in str(drawn[1]), drawn


def _type_reward(page) -> None:
    editor = page.locator(".lk-reward-editor .lk-code-editor .cm-content")
    editor.click()
    page.keyboard.press("Control+a")
    page.keyboard.press("Delete")
    for i, line in enumerate(TYPED):
        if i:
            page.keyboard.press("Enter")
        page.keyboard.type(line)


def test_dashboard_and_reward_editor_in_jupyterlab(lab, tmp_path):
    shutil.rmtree(ARTIFACTS, ignore_errors=True)  # screenshots of this run only
    with chromium_page(tmp_path) as page:
        try:
            console = []  # the page's warnings and errors, printed if the test fails
            page.on(
                "console",
                lambda m: console.append(f"{m.type}: {m.text}") if m.type != "debug" else None,
            )
            page.set_default_timeout(120_000)
            page.goto(lab)
            page.wait_for_function(KERNEL_IDLE, timeout=120_000)
            _shot(page, "0-opened")
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
            page.wait_for_function(ALL_RAN, timeout=300_000, polling=500)
            assert page.evaluate(ERRORS) == []
            page.locator(".lk-dashboard .js-plotly-plot").first.wait_for()
            _scroll_top(page, ".lk-dashboard .lk-figure")
            page.wait_for_function(
                f"() => {{ const t = {PLOT}.data[0]; return !!t && !!t.x && t.x.length > 0; }}"
            )
            n0 = _points(page)
            assert n0 >= 1, "the dashboard's reward chart shows the steps already trained"
            _check_legends(page)
            _check_fits(page, PLOT)
            _shot(page, "1-dashboard")

            page.click(".lk-dashboard .lk-start")
            _wait_text(page, ".lk-dashboard .lk-status", "running")
            page.wait_for_function(f"n => {PLOT}.data[0].x.length >= n + 2", arg=n0, polling=250)
            page.click(".lk-dashboard .lk-pause")
            _wait_text(page, ".lk-dashboard .lk-status", "paused")
            n1 = _points(page)
            assert n1 >= n0 + 2

            editor = page.locator(".lk-reward-editor")
            _scroll_top(page, ".lk-reward-editor")
            _check_editor_opens_drawn(page)
            _check_fits(page, EDITOR_PLOT)
            _shot(page, "2-editor-before-try")

            _type_reward(page)
            line2 = page.locator(".lk-reward-editor .cm-line").nth(1).inner_text()
            assert line2 == "    bonus = 0.5 +", repr(line2)  # Enter after ':' indented it
            editor.locator(".lk-try").click()
            msg = _wait_text(page, ".lk-reward-message", "✗")
            assert "syntax error on line 2" in msg, msg
            page.wait_for_function(f"() => ({ERROR_LINE})().length === 1")
            assert page.evaluate(ERROR_LINE) == [["2", "    bonus = 0.5 +"]]
            _shot(page, "3-syntax-error-marked")

            page.locator(".lk-reward-editor .cm-line").nth(1).click()
            page.keyboard.press("End")
            page.keyboard.type(" 0.25")
            page.keyboard.press("Shift+Enter")  # the editor's shortcut for Try
            _wait_text(page, ".lk-reward-message", "✓ shaped")
            assert page.evaluate(ERROR_LINE) == []
            tried = page.evaluate(
                f"() => [{EDITOR_PLOT}.data[0].x.length, {EDITOR_PLOT}.layout.title.text]"
            )
            assert tried[0] > 0 and tried[1].startswith("Try: shaped"), tried
            assert len(page.locator(".lk-reward-editor .cm-line").all()) == 3  # no newline added
            _shot(page, "4-fixed-and-tried")
            editor.locator(".lk-apply-reward").click()
            _wait_text(page, ".lk-reward-message", "applied shaped")
            editor.locator(".lk-reward-tabs .lm-TabBar-tab", has_text="Reward bench").click()
            editor.locator(".lk-bench").click()
            _wait_text(page, ".lk-reward-message", "reward_bench(shaped)")
            _wait_text(page, ".lk-bench-table", "reward_bench(shaped)")
            _scroll_top(page, ".lk-reward-editor .lk-reward-tabs")
            _shot(page, "5-reward-bench-tab")

            _scroll_top(page, ".lk-dashboard .lk-figure")
            n2 = _points(page)
            page.click(".lk-dashboard .lk-resume")
            page.wait_for_function(f"n => {PLOT}.data[0].x.length >= n + 2", arg=n2, polling=250)
            assert page.evaluate(f"() => ({PLOT}.layout.shapes || []).length") > 0
            page.click(".lk-dashboard .lk-stop")
            _wait_text(page, ".lk-dashboard .lk-status", "stopped")
            n3 = _points(page)
            time.sleep(1.5)
            assert _points(page) == n3, "no step after Stop"
            _check_legends(page, extra="shaped")
            _scroll_top(page, ".lk-dashboard .lk-figure")
            _shot(page, "6-resumed-and-stopped")
        except Exception:
            _shot(page, "failure")
            print("browser console:", *console[-40:], sep="\n")
            raise
