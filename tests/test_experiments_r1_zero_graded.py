"""R1-Zero on the graded task (labkit.experiments.r1_zero_graded): the claims name the arms and
the summary's columns. The runs: lab 90's live cell in fast mode and the stored result."""

from labkit.experiments import r1_zero_graded as g
from labkit.experiments.cells import STATS, changes
from labkit.tasks.graded import CELLS, bucket


def test_claims_name_summary_columns():
    groups = [bucket(k, d) for k, d in CELLS] + ["hard", "easy", "all"]
    stats = {f"{s} ({c})": 0.0 for s in STATS for c in groups}
    columns = set(changes(stats, stats)) | {
        f"think gain: {g.PAYS} - {g.DOES_NOT}",
        "len/mean slope (2nd half)",
    }
    for c in g.EXPERIMENT.claims:
        assert c.metric in columns and c.arm in g.ARMS, c.key
    assert set(g.EXPERIMENT.live["arms"]) <= set(g.ARMS)
