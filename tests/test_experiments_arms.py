"""labkit.experiments.arms.addition_run: the call it replaced builds the same run. The harness
call is recorded (``resume_or_start``, nothing trained) from lab 51's precision arm and from
``off_policy.setting_run``, and compared with the arguments the code passed before and with the
trainer config they build."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import pandas as pd
import pytest

from labkit.algos.grpo import GRPOTrainer
from labkit.experiments import arms, off_policy, precision
from labkit.experiments.gpu import CPU


@pytest.fixture
def calls(monkeypatch):
    """The harness calls ``arms`` makes, each answered by a trainer stand-in."""
    made = []

    def record(cls, run_name, steps, tick, until=None, **kwargs):
        made.append({"cls": cls, "run_name": run_name, "steps": steps, "until": until, **kwargs})
        log = SimpleNamespace(metrics=pd.DataFrame({"step": [steps]}), close=lambda: None)
        return SimpleNamespace(model=None, log=log)

    monkeypatch.setattr(arms, "resume_or_start", record)
    return made


def config(call: dict):
    """The config ``call``'s trainer builds from its config fields (``Trainer.__init__``'s first
    line; the other keywords, ``task``, ``track_kl``, are the trainer's own)."""
    cfg = call["cls"].config_class()
    names = {f.name for f in dataclasses.fields(cfg)}
    return dataclasses.replace(cfg, **{k: v for k, v in call.items() if k in names})


def test_precision_train_makes_the_call_it_made_before(calls, monkeypatch):
    monkeypatch.setattr(precision, "mismatch_summary", lambda *a: {})
    monkeypatch.setattr(precision, "load_policy", lambda name: (None, None))
    monkeypatch.setattr(precision, "accuracy", lambda *a, **k: 0.5)
    settings, steps = precision.ARMS["bf16 + TIS"], 30
    precision.train("bf16 + TIS", settings, seed=3, steps=steps, fast=True, run_name="r", tick=None)
    fixed = {k: v for k, v in CPU.items() if k != "model"}
    before = {  # the grpo_run(...) call lab 51's stored result ran
        "cls": GRPOTrainer,
        "run_name": "r",
        "steps": steps,
        "until": None,
        "model": "tiny",
        "seed": 3,
        "max_steps": steps,
        "task": "addition",
        "track_kl": False,
        "save_steps": 10,
        **fixed,
        **settings,
    }
    assert calls == [before]
    assert config(calls[0]).tis_cap == precision.TIS_CAP
    assert config(calls[0]).save_steps == 10 and config(calls[0]).precision == "bf16"


def test_off_policy_setting_run_is_addition_run_under_its_setting(calls):
    settings = off_policy.ARMS[next(a for a in off_policy.ARMS if a != off_policy.PROBE)]
    off_policy.setting_run(off_policy.STRESS, settings, seed=1, steps=7, run_name="s", tick=None)
    arms.addition_run(settings, seed=1, steps=7, run_name="s", tick=None, **off_policy.STRESS)
    assert calls[0] == calls[1]
    assert config(calls[0]) == config(calls[1])
    assert config(calls[0]).save_steps == 2 and config(calls[0]).num_iterations == 4
