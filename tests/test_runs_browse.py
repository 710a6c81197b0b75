"""The completion browser: every completion of a run, filtered and paged from the run files,
one prompt across steps, and a selected row's per-token view."""

import pytest

import labkit as lk
from labkit.runs.browse import CompletionIndex


@pytest.fixture(scope="module")
def run(module_runs):
    tr = lk.GRPOTrainer(
        run_name="browse",
        max_steps=3,
        num_generations=4,
        prompts_per_step=4,
        diagnostics=2,
        track_kl=False,
    )
    tr.train(progress=False)
    return tr.log


def test_the_index_pages_and_filters_every_completion(run):
    idx = CompletionIndex(run)
    s = run.samples
    assert len(idx) == len(s) == 48
    rows = idx.select(steps=(2, 3), correct=True)
    want = s[(s["step"] >= 2) & (s["correct"])]
    assert len(rows) == len(want)
    page, nxt = idx.page(rows, 0, 5)
    assert list(page["completion"]) == list(want["completion"][:5]) and nxt == min(5, len(want))
    page, _ = idx.page(idx.select(), 0, 100, regex=r"^1")
    assert list(page["completion"]) == [c for c in s["completion"] if c.startswith("1")]


def test_one_prompt_is_followed_across_steps(run):
    idx = CompletionIndex(run)
    prompt = run.samples["prompt"].iloc[0]
    page, _ = idx.page(idx.select(prompt=prompt), 0, 100)
    assert set(page["prompt"]) == {prompt} and page["step"].iloc[0] == 1


def test_the_widget_filters_pages_and_opens_the_token_view(run):
    from labkit.widgets import CompletionBrowser

    b = CompletionBrowser(run, page_size=10)
    assert len(b.frame) == 10 and "48 of 48" in b.info.value
    b.next()
    assert b.frame["completion"].tolist() == run.samples["completion"].iloc[10:20].tolist()
    b.previous()
    b.truncated.value = "yes"
    assert len(b.rows) == int(run.samples["truncated"].sum())
    b.truncated.value = "any"
    b.length.value = (b.length.min, b.length.min)
    assert len(b.rows) == int((run.samples["length"] == b.length.min).sum())
    b.length.value = (b.length.min, b.length.max)
    b.regex.value = "(("  # a regex being typed: the message says so
    assert "regex" in b.info.value
    b.regex.value = ""
    b.table.selected_rows = [0]  # a click on step 1's first completion: it has tokens
    assert type(b.tokens.children[0]).__name__ == "FigureWidget"
    b.table.selected_rows = [3]  # diagnostics=2: the fourth has none, and says so
    assert "no per-token record" in b.tokens.children[0].value
