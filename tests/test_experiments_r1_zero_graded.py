"""R1-Zero on the graded task (labkit.experiments.r1_zero_graded): the held-out stats per cell
and the claims' columns. The runs: lab 90's live cell in fast mode and the stored result."""

import pandas as pd
import pytest

from labkit import load_policy
from labkit.experiments import r1_zero_graded as g
from labkit.tasks.graded import CELLS, bucket


@pytest.fixture(scope="module")
def stats():
    return g.heldout_cells(*load_policy("tiny-graded"), per_cell=3, seed=0)


def test_heldout_cells_pools_hard_and_easy(stats):
    cells = [bucket(k, d) for k, d in CELLS]
    assert set(g.HARD) | set(g.EASY) == set(cells)
    for s in g.STATS:
        per_cell = [stats[f"{s} ({c})"] for c in cells]
        hard = [stats[f"{s} ({c})"] for c in g.HARD]
        assert stats[f"{s} (all)"] == pytest.approx(sum(per_cell) / len(cells))  # 3 per cell
        assert stats[f"{s} (hard)"] == pytest.approx(sum(hard) / len(hard))
    assert all(0 <= stats[f"pass ({c})"] <= 1 for c in cells)


def test_claims_name_summary_columns(stats):
    columns = set(g.changes(stats, stats)) | {
        f"think gain: {g.PAYS} - {g.DOES_NOT}",
        "len/mean slope (2nd half)",
    }
    for c in g.EXPERIMENT.claims:
        assert c.metric in columns and c.arm in g.ARMS, c.key
    assert set(g.EXPERIMENT.live["arms"]) <= set(g.ARMS)


def test_cell_table_orders_cells_easiest_first():
    s = pd.DataFrame({"arm": ["a"], "seed": [0]})
    for c in ("3x2", "2x1", "hard"):
        for w in ("before", "after", "gain"):
            s[f"pass ({c}) {w}"] = 0.5
    assert g.cell_table(s)["cell"].tolist() == ["2x1", "3x2", "hard"]
