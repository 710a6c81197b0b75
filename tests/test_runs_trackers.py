"""report_to=("tensorboard", "trackio"): labkit's metrics under TRL's names and the completions
table reach both trackers, written locally and offline; read back from what they wrote."""

import uuid

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

import labkit as lk
from labkit.runs.trackers import TRL_NAMES, tracker_name

SMALL = {"num_generations": 4, "prompts_per_step": 2, "max_steps": 2, "save_steps": 0}


@pytest.fixture
def project():
    """A trackio project of its own, deleted afterwards."""
    name = f"labkit-test-{uuid.uuid4().hex[:8]}"
    yield name
    import trackio

    trackio.delete_project(name, force=True)


def test_tensorboard_and_trackio_get_the_run(runs, project):
    tr = lk.GRPOTrainer(
        "tiny", run_name="tracked", report_to=("tensorboard", "trackio"), project=project, **SMALL
    )
    log = tr.train(progress=False)
    m, s = log.metrics, log.samples

    events = EventAccumulator(str(runs / "tracked" / "tensorboard"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    for key in ("reward/mean", "len/mean", "adv/frac_zero_std", "kl/k3", "loss", "entropy"):
        assert tracker_name(key) in tags, key
    assert "train/reward" in tags and "train/completions/mean_length" in tags  # TRL's names
    reward = events.Scalars("train/reward")
    assert [e.step for e in reward] == list(m["step"])
    assert [e.value for e in reward] == pytest.approx(list(m["reward/mean"]))

    from trackio.sqlite_storage import SQLiteStorage

    rows = SQLiteStorage.get_logs(project, "tracked")
    scalars = [r for r in rows if "train/reward" in r]
    assert [r["train/reward"] for r in scalars] == pytest.approx(list(m["reward/mean"]))
    assert [r["step"] for r in scalars] == [1, 2]
    tables = [r["completions"]["_value"] for r in rows if "completions" in r]
    assert len(tables) == 2 and len(tables[0]) == 8
    first = tables[0][0]  # TRL's columns: step, prompt, completion, each reward, advantage
    assert set(first) >= {"step", "prompt", "completion", "digit_partial", "advantage"}
    assert [t["completion"] for t in tables[0]] == list(s[s["step"] == 1]["completion"])


def test_trls_names_are_its_logged_keys():
    from labkit.integrations.trl_bridge import RL_KEYS, map_metrics

    assert {v: k for k, v in RL_KEYS.items() if v in TRL_NAMES} == {
        k: v for k, v in TRL_NAMES.items() if k in RL_KEYS.values()
    }
    row = map_metrics({trl: 0.5 for trl in TRL_NAMES.values()}, 1, "grpo")
    assert all(row[labkit] == 0.5 for labkit in TRL_NAMES if labkit in row)


def test_a_failing_tracker_is_dropped_with_a_warning_and_the_run_goes_on():
    class Broken:
        def write(self, kind, rows):
            raise OSError("disk full")

        def flush(self):
            pass

    tr = lk.GRPOTrainer("tiny", **SMALL)
    tr.log.sinks = [Broken()]
    with pytest.warns(UserWarning, match="Broken failed .*disk full"):
        tr.train(progress=False)
    assert len(tr.log.metrics) == 2 and tr.log.sinks == []
