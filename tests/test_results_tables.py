"""Stored results are the one source of the numbers: the README's claims table and every lab's
"measured" cell equal what scripts/results_tables.py makes from labkit/results/; each stored
result was run under the claims its experiment states now (a rule changed after the run fails
here until the experiment is run again); all of them together stay small."""

import importlib
import pathlib
import sys

import pytest

from labkit.experiments import results

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import results_tables

NAMES = results.stored()


def test_the_readme_and_the_labs_are_generated_from_the_stored_results():
    found = results_tables.stored_with_labs()
    files = {results_tables.README: results_tables.readme_text(found)}
    files |= results_tables.lab_sources(found)
    stale = [str(p.relative_to(ROOT)) for p, text in files.items() if p.read_text() != text]
    assert not stale, f"{stale}: run python scripts/results_tables.py"


@pytest.mark.parametrize("name", NAMES)
def test_each_stored_result_was_run_under_its_claims_as_stated(name):
    exp = importlib.import_module(f"labkit.experiments.{name}").EXPERIMENT
    stored = results.load(name)
    assert stored.claims == list(exp.claims), (
        f"{name}: the claims changed after the stored run; run "
        f"python scripts/run_experiment.py {name} again"
    )
    assert len(stored.meta["seeds"]) >= 5 and not stored.meta["fast"]
    assert set(stored.summaries["arm"]) == set(exp.arms)


def test_the_stored_results_stay_small():
    assert results.size_bytes() < 5 * 2**20


@pytest.mark.parametrize("name", NAMES)
def test_each_lab_draws_its_stored_result_before_its_live_cell(name):
    import nbformat

    exp = importlib.import_module(f"labkit.experiments.{name}").EXPERIMENT
    nb = nbformat.read(ROOT / "labs" / f"{exp.lab}.ipynb", as_version=4)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    load = next(i for i, c in enumerate(code) if f'lk.experiments.load("{name}")' in c)
    live = next(i for i, c in enumerate(code) if "run_live(" in c and i > load)
    figure = next(i for i, c in enumerate(code) if ".show()" in c and i > load)
    assert load < figure < live, f"{exp.lab}: the stored figures come before the live cell"


def test_a_wide_summary_is_tabled_one_metric_a_row():
    import pandas as pd

    from labkit.experiments import tables
    from labkit.experiments.harness import Result

    cols = {f"m{i}": [1.0, 3.0, 2.0] for i in range(tables.WIDE + 1)}
    s = pd.DataFrame({"arm": ["a", "a", "b"], "seed": [0, 1, 0], **cols})
    lines = tables.arm_table(Result("x", s, pd.DataFrame(), [])).splitlines()
    assert lines[0] == "| metric | a (2 seeds) | b (1 seeds) |"
    assert len(lines) == 2 + tables.WIDE + 1 and lines[2].startswith("| m0 | 2 ± ")
    narrow = tables.arm_table(Result("x", s[["arm", "seed", "m0"]], pd.DataFrame(), []))
    assert narrow.splitlines()[0] == "| arm | seeds | m0 |"
