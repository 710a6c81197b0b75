"""Held-out stats per difficulty cell of the graded task (labkit.experiments.cells)."""

import pandas as pd
import pytest

from labkit import load_policy
from labkit.experiments import cells
from labkit.tasks.graded import CELLS, bucket


@pytest.fixture(scope="module")
def stats():
    return cells.heldout_cells(*load_policy("tiny-graded"), per_cell=3, seed=0)


def test_heldout_cells_pools_hard_and_easy(stats):
    names = [bucket(k, d) for k, d in CELLS]
    assert set(cells.HARD) | set(cells.EASY) == set(names)
    for s in cells.STATS:
        per_cell = [stats[f"{s} ({c})"] for c in names]
        hard = [stats[f"{s} ({c})"] for c in cells.HARD]
        assert stats[f"{s} (all)"] == pytest.approx(sum(per_cell) / len(names))  # 3 per cell
        assert stats[f"{s} (hard)"] == pytest.approx(sum(hard) / len(hard))
    assert all(0 <= stats[f"pass ({c})"] <= 1 for c in names)


def test_cell_table_orders_cells_easiest_first():
    s = pd.DataFrame({"arm": ["a"], "seed": [0]})
    for c in ("3x2", "2x1", "hard"):
        for w in ("before", "after", "gain"):
            s[f"pass ({c}) {w}"] = 0.5
    assert cells.cell_table(s)["cell"].tolist() == ["2x1", "3x2", "hard"]


def test_the_cold_start_probe_is_heldout_cells_of_the_loaded_checkpoint_once(stats):
    a, b = (cells.cold_start_cells("tiny-graded", 3, 0) for _ in range(2))
    assert a == stats and a is not b  # the same numbers, a fresh dict for each caller
    assert cells._cold_start_cells.cache_info().hits >= 1
