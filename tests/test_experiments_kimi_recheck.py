"""Kimi's length reward and long2short from tiny-graded-recheck (labkit.experiments.kimi_recheck):
kimi_length's arms and claims on the new cold start, the precondition's column and rule, and
kimi_length itself still on tiny-graded (its stored result stands). The checkpoint's card:
tests/test_tasks_graded.py. The runs: the stored result (lab 92)."""

import inspect

import pandas as pd
import pytest

from labkit.experiments import kimi_length as kl
from labkit.experiments import kimi_recheck as kr
from labkit.experiments import long2short as l2s
from labkit.experiments.cells import EXTRA, STATS, changes
from labkit.experiments.claims import judge
from labkit.experiments.harness import Outcome
from labkit.experiments.lagrange import CELL_NAMES
from labkit.models.policy import BUILTIN


def held_out(value: float) -> dict:
    groups = [*CELL_NAMES, "hard", "easy", "all"]
    return kl.with_pool({f"{s} ({g})": value for s in (*STATS, *EXTRA) for g in groups})


def test_claims_name_arms_and_summary_columns():
    summary = changes(held_out(0.3), held_out(0.2)) | l2s.pair_stats([])
    columns = set(summary) | {kr.KEPT}
    for c in kr.EXPERIMENT.claims:
        assert c.metric in columns and c.arm in kr.ARMS, c.key
        assert c.baseline is None or c.baseline in kr.ARMS, c.key
    assert set(kr.EXPERIMENT.live["arms"]) <= set(kr.ARMS)
    assert len(kr.EXPERIMENT.seeds) >= 5 and kr.EXPERIMENT.name == "kimi_recheck"
    assert list(kr.ARMS)[-1] == kr.L2S  # a seed's long2short job is sent after its acc job
    assert len({c.key for c in kr.CLAIMS}) == len(kr.CLAIMS)


def test_it_reuses_kimi_length_without_the_plain_arm():
    assert kl.PLAIN not in kr.ARMS and all(kr.ARMS[a] is kl.ARMS[a] for a in kr.ARMS)
    assert [c.key for c in kr.CLAIMS[1:]] == [c.key for c in kl.CLAIMS if c.key != "kimi-vs-plain"]
    assert kr.CLAIMS[0] is kr.PRECONDITION and kr.PRECONDITION.arm == kr.ACC
    assert kr.EXPERIMENT.steps == kl.EXPERIMENT.steps
    assert not any("plain" in c for c in kr.EXPERIMENT.curves)


def test_kimi_length_still_starts_from_tiny_graded():
    """The stored kimi_length result was made from tiny-graded: its default stays."""
    for fn in (kl.train, kl.grpo_arm):
        assert inspect.signature(fn).parameters["policy"].default == kl.MODEL == "tiny-graded"
    assert kr.MODEL == "tiny-graded-recheck" and kr.MODEL in BUILTIN


def test_train_runs_kimi_length_from_the_new_cold_start(monkeypatch):
    seen = {}

    def fake(arm, settings, **kwargs):
        seen.update(kwargs, arm=arm)
        return Outcome({"rechecks (all) before": 1.2, "rechecks (all) after": 0.5}, pd.DataFrame())

    monkeypatch.setattr(kl, "train", fake)
    out = kr.train(kr.ACC, kr.ARMS[kr.ACC], seed=3, steps=2, fast=True, run_name="x", tick=None)
    assert seen["policy"] == kr.MODEL and seen["arm"] == kr.ACC and seen["seed"] == 3
    assert seen["pair_prompts"] is kr.PAIR_PROMPTS and kr.PAIR_PROMPTS["full"] == 512
    assert out.summary[kr.KEPT] == pytest.approx(0.5 - 0.6)


def test_the_precondition_asks_for_more_than_half_the_rechecks():
    """Kept above half on every seed: reproduced; below half on every seed: not reproduced
    (the set-up still unfair)."""
    rows = lambda after: pd.DataFrame(
        {
            "arm": [kr.ACC] * 5,
            "seed": range(5),
            kr.KEPT: [
                kr.kept({"rechecks (all) after": a, "rechecks (all) before": 1.0}) for a in after
            ],
        }
    )
    assert judge(kr.PRECONDITION, rows([0.7, 0.8, 0.6, 0.75, 0.9])).verdict == "reproduced"
    assert judge(kr.PRECONDITION, rows([0.1, 0.05, 0.2, 0.0, 0.1])).verdict == "not reproduced"
