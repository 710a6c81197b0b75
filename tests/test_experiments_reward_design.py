"""Lab 40's gameable reward over seeds (labkit.experiments.reward_design): the proxy's loophole,
the lab's inline code is the experiment's reward, and the claims name real arms and columns.
The runs: lab 40's live cell in fast mode and the stored result (test_stored_verdicts.py)."""

import json
import pathlib

import pandas as pd

from labkit.experiments import reward_design as rd
from labkit.rewards.builtin import exact_match
from labkit.widgets.sandbox import compile_reward

LAB = pathlib.Path(__file__).resolve().parent.parent / "labs" / "40_reward_design.ipynb"


def test_a_right_prefix_scores_as_much_as_the_right_answer():
    """The loophole: "15" for 151 scores 1.0 under the proxy, 0.5 under the fixed weights."""
    c, a = ["151", "15", "150"], ["151"] * 3
    assert rd.digits_right(c, a) == [1.0, 1.0, 2 / 3]
    w = rd.ARMS[rd.FIXED]["reward_weights"]
    fixed = [w[0] * d + w[1] * e for d, e in zip(rd.digits_right(c, a), exact_match(c, a))]
    assert fixed == [1.5, 0.5, w[0] * 2 / 3]


def test_the_lab_edits_the_experiments_reward():
    """The code lab 40 types into its editor scores as the experiment's digits_right does."""
    nb = json.loads(LAB.read_text())
    cell = next("".join(c["source"]) for c in nb["cells"] if "gameable = r" in "".join(c["source"]))
    code = cell.split('r"""', 1)[1].split('"""', 1)[0]
    typed = compile_reward(code)
    c, a = ["151", "15", "1", "152", "x", ""], ["151"] * 6
    assert typed(c, answer=a) == rd.digits_right(c, a)


def test_claims_name_arms_and_summary_columns():
    m = pd.DataFrame({c: [1.0, 2.0, 3.0] for c in rd.CURVES})
    columns = {"accuracy before", "accuracy", "accuracy gain", "batch accuracy change"}
    columns |= {"reward change", "length change"}
    for c in rd.EXPERIMENT.claims:
        assert c.metric in columns and c.arm in rd.ARMS, c.key
        assert c.baseline is None or c.baseline in rd.ARMS, c.key
    assert rd.change(m, "len/mean") == 2.0  # last 10 % (one step) minus first 10 %
    assert set(rd.EXPERIMENT.live["arms"]) <= set(rd.ARMS)
