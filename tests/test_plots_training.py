"""Run figures from a RunLog written by hand: plotted numbers are the log's, events are marked,
NaN never reaches the JSON, per-step figures reuse core's advantages and token weights."""

import json
import math

import numpy as np
import pytest
import torch

from labkit.core.advantages import group_advantages
from labkit.core.policy import token_weights
from labkit.plots import live, run_step, training
from labkit.plots.aggregation import lengths_to_mask
from labkit.plots.report import report
from labkit.runs.log import RunLog

G = 4


def _strict(fig) -> dict:
    """The figure's JSON, refusing NaN/Infinity (a FigureWidget message must be strict JSON)."""

    def bad(c):
        raise ValueError(f"non-strict JSON constant {c}")

    return json.loads(fig.to_json(), parse_constant=bad)


def make_run(steps=3, swap_at=None) -> RunLog:
    """A run of ``steps`` steps, 2 groups of G, deterministic rewards; a reward swap event."""
    log = RunLog(None, {"num_generations": G})
    for s in range(1, steps + 1):
        fn = "new_fn" if swap_at is not None and s > swap_at else "digit_partial"
        rewards = [1.0, 0.0, 0.0, 1.0] + [0.5] * G  # group 1 has zero spread
        adv = group_advantages(torch.tensor(rewards), G).tolist()
        samples = [
            {
                "step": s,
                "group": i // G,
                "prompt": f"{i}+1=",
                "completion": str(i + s),
                "answer": str(i + 1),
                "reward": r,
                "advantage": a,
                "length": 2 + i % 3,
                "truncated": i == 7,
                "correct": r == 1.0,
                f"rewards/{fn}": r,
            }
            for i, (r, a) in enumerate(zip(rewards, adv))
        ]
        m = {
            "step": s,
            "reward/mean": 0.1 * s,
            "accuracy": 0.05 * s,
            f"rewards/{fn}/mean": 0.1 * s,
            "kl/k1": 0.01 * s,
            "kl/k2": 0.02 * s,
            "kl/k3": 0.03 * s,
            "len/mean": 3.0,
            "len/correct": 2.5,
            "len/incorrect": math.nan if s == 2 else 3.5,
            "len/truncated_frac": 0.125,
            "loss": 0.0,
            "grad_norm": 0.3,
            "adv/frac_zero_std": 0.5,
            "clip/ratio_low": 0.0,
            "clip/ratio_high": 0.1,
            "clip/region": 0.1,
            "entropy": 1.0 / s,
        }
        tokens = [
            {
                "step": s,
                "sample": 0,
                "prompt": "0+1=",
                "tokens": ["1", "<eos>"],
                "advantage": adv[0],
                "ratio": [1.0, 1.3],
                "clipped": [0.0, 1.0],
                "k1": [0.1, -0.2],
                "k2": [0.005, 0.02],
                "k3": [0.005, 0.019],
            }
        ]
        log.log_step(m, samples, tokens)
        if swap_at == s:
            log.log("events", [{"step": s, "kind": "update", "reward_funcs": ["new_fn"]}])
    return log


def test_reward_curve_plots_the_log_and_marks_events():
    run = make_run(4, swap_at=2)
    fig = training.reward_curve(run)
    names = [t.name for t in fig.data]
    assert names == ["reward (total)", "digit_partial", "new_fn", "accuracy (train samples)"]
    np.testing.assert_allclose(np.array(fig.data[0].y, dtype=float), [0.1, 0.2, 0.3, 0.4])
    # the swapped-in function only has values after the swap
    assert list(fig.data[2].y[:2]) == [None, None] and fig.data[2].y[2] == pytest.approx(0.3)
    (line,) = fig.layout.shapes
    assert line.x0 == 2.5  # between step 2 and step 3
    assert "reward_funcs=['new_fn']" in fig.layout.annotations[0].text
    _strict(fig)


def test_every_curve_is_strict_json_and_reads_the_right_key():
    run = make_run(3)
    expected = {
        training.kl_curve: ("k3", [0.03, 0.06, 0.09]),
        training.clip_curve: ("clipped high", [0.1, 0.1, 0.1]),
        training.entropy_curve: ("entropy", [1.0, 0.5, 1 / 3]),
    }
    for fn, (name, y) in expected.items():
        fig = fn(run)
        trace = next(t for t in fig.data if t.name == name)
        np.testing.assert_allclose(np.array(trace.y, dtype=float), y)
        _strict(fig)
    length = training.length_curve(run)
    assert next(t for t in length.data if t.name == "incorrect").y[1] is None  # NaN -> gap
    _strict(length)


def test_length_distribution_splits_correct_and_incorrect():
    run = make_run(2)
    fig = training.length_distribution(run)
    correct, incorrect = fig.data
    s = run.samples
    assert sorted(correct.y) == sorted(s[s["correct"]]["length"].tolist())
    assert sorted(incorrect.y) == sorted(s[~s["correct"]]["length"].tolist())


def test_loss_zero_panel_shows_loss_grad_norm_and_zero_spread_fraction():
    fig = training.loss_zero_panel(make_run(3))
    assert [t.name for t in fig.data] == ["loss", "grad norm", "zero-spread groups"]
    assert list(fig.data[2].y) == [0.5, 0.5, 0.5]  # group 1 of every step has equal rewards
    assert fig.data[2].yaxis == "y3"


def test_advantage_slider_has_one_histogram_per_step_and_shows_the_last():
    fig = run_step.advantage_slider(make_run(3))
    assert len(fig.data) == 3 and [t.visible for t in fig.data] == [False, False, True]
    steps = fig.layout.sliders[0].steps
    assert [s.label for s in steps] == ["1", "2", "3"]
    assert steps[0].args[0]["visible"] == [True, False, False]


def test_step_advantage_table_uses_cores_schemes():
    t = run_step.step_advantage_table(make_run(2), step=2)
    assert t["z-score (population std)"].round(4).tolist()[:4] == [1.0, -1.0, -1.0, 1.0]
    assert t["z-score (n-1 std, TRL)"].round(3).tolist()[:4] == [0.866, -0.866, -0.866, 0.866]
    assert (t["RLOO"][4:] == 0).all()  # zero-spread group: no signal under any scheme
    fig = run_step.advantage_schemes(make_run(2), groups=1)
    assert len(fig.data[0].x) == G  # one group shown
    with pytest.raises(ValueError, match="step=9 is not in the run"):
        run_step.step_advantage_table(make_run(2), step=9)


def test_token_heatmap_and_per_token_kl_read_the_token_record():
    run = make_run(2)
    fig = run_step.token_heatmap(run, step=1, sample=0)
    hm = fig.data[0]
    assert list(hm.y) == ["advantage", "ratio", "clipped", "k1", "k2", "k3"]
    assert hm.text[1] == ["1", "1.3"] and hm.text[2] == ["0", "1"]
    assert hm.z[1][0] == 0.0 and hm.z[1][1] == 1.0  # ratio coloured by distance from 1
    kl = run_step.kl_tokens(run, step=1)
    assert [t.name for t in kl.data] == ["k1", "k2", "k3"] and list(kl.data[0].y) == [0.1, -0.2]
    with pytest.raises(ValueError, match="sample=3 has no token record"):
        run_step.token_row(run, 1, 3)


def test_step_token_weights_are_cores_weights_for_the_real_lengths():
    run = make_run(1)
    fig = run_step.step_token_weights(run, n=4, loss_types=("grpo", "dr_grpo"))
    lengths = run.samples["length"].tolist()[:4]
    mask = lengths_to_mask(lengths)
    np.testing.assert_allclose(
        np.nan_to_num(np.array(fig.data[0].z, dtype=float)),
        token_weights(mask, "grpo").numpy(),
        atol=1e-7,
    )


def test_live_figure_adds_a_trace_for_a_swapped_in_reward_and_lines_for_events():
    run = make_run(4, swap_at=2)
    rows, events = run.records["metrics"], run.records["events"]
    names = [name for _, _, name in live.trace_keys(rows)]
    assert names[-2:] == ["digit_partial", "new_fn"]
    fig = live.live_figure(rows, events)
    assert len(fig.layout.shapes) == live.ROWS * live.COLS  # one line in each panel
    assert fig.data[0].y == (0.1, 0.2, 0.30000000000000004, 0.4)
    _strict(fig)


def test_report_has_every_figure_and_the_event_list(tmp_path):
    run = make_run(3, swap_at=1)
    path = report(run, tmp_path / "r.html", {"held-out accuracy": "0.3 -> 0.5"})
    page = path.read_text()
    for title in [
        "Reward over steps",
        "Why is my loss zero?",
        "Length distribution",
        "Clip fractions",
        "Policy entropy",
        "Advantage distribution of one step",
        "five advantage schemes",
        "Weight of each token",
        "Per-token KL",
    ]:
        assert title in page, title
    assert "after step 1: reward_funcs=[&#x27;new_fn&#x27;]" in page
    assert "0.3 -&gt; 0.5" in page
