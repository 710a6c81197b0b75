"""A model or dataset id that is neither built in nor local fails at once when the hub cannot be
reached (huggingface_hub alone retries ~25-50 s first), naming what to pass instead."""

import time

import huggingface_hub.constants as hub
import pytest

import labkit as lk
from labkit.tasks.hub_access import cached, check_hub


@pytest.fixture
def unreachable_hub(monkeypatch):
    """No offline switch, and a hub endpoint that refuses connections."""
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    for var in ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(hub, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hub, "ENDPOINT", "http://127.0.0.1:9")


def test_a_hub_model_id_fails_fast_offline(unreachable_hub):
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"unknown policy 'someone/some-model'.*cannot be reached"):
        lk.load_policy("someone/some-model")
    assert time.perf_counter() - t0 < 10


def test_a_hub_dataset_id_fails_fast_offline(unreachable_hub):
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=r"dataset 'openai/gsm8k'.*cannot be reached.*local file"):
        lk.get_task("gsm8k")
    assert time.perf_counter() - t0 < 10


def test_a_cached_id_is_read_from_the_cache(unreachable_hub, tmp_path, monkeypatch):
    monkeypatch.setattr(hub, "HF_HUB_CACHE", str(tmp_path))
    (tmp_path / "models--org--cached" / "snapshots").mkdir(parents=True)
    assert cached("org/cached") and not cached("org/other")
    assert check_hub("org/cached", "model", "x", "y") is True  # cache only: no hub asked
    with pytest.raises(ValueError, match="x, and the Hugging Face hub cannot be reached"):
        check_hub("org/other", "model", "x", "y")
