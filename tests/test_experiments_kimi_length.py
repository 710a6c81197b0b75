"""Kimi's length penalty and long2short (labkit.experiments.kimi_length): the plain penalty,
the verdict on a hand-made table, and (slow) the direction a fixed-seed run showed."""

import pandas as pd

from labkit.experiments import kimi_length


def test_plain_length_and_verdict():
    assert kimi_length.plain_length(["x" * 18]) == [-0.25]
    t = pd.DataFrame({"accuracy": [0.3, 0.5, 0.47, 0.2], "length correct": [40, 40, 30, 20],
                      "think": [0.5, 0.6, 0.3, 0.0]},
                     index=["cold start", "acc", "acc + kimi", "acc + plain"])
    v = kimi_length.verdict({"table": t})
    assert "\nREPRODUCED (acc + kimi)" in v  # shorter, 0.03 below: within the margin
    assert "NOT REPRODUCED (acc + plain)" in v  # shorter but 0.3 below
