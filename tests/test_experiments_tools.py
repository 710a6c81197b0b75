"""Lab 60 (labkit.experiments.tools): held-out episodes in equal shares per level, the env-token
weight read from a run log, a run that resumes from its checkpoint with its environment found
from its task, and each claim judged on an arm and a summary column the experiment produces.
The runs: the lab's live cell in fast mode and the stored result."""

import pandas as pd
import pytest
import torch

from labkit.envs import CalcTask, Calculator, GuessNumber, GuessTask, tool_reward
from labkit.envs.calculator import LEVELS, level
from labkit.experiments import tools

torch.set_num_threads(1)


def summary_columns() -> set[str]:
    """What ``train`` puts in a summary for either environment."""
    calc = ["accuracy", "call_rate", "call spread"] + [
        f"{k}/{lv}" for k in ("acc", "calls") for lv in LEVELS
    ]
    keys = calc + ["turns", "reward"]
    return (
        {f"{k} {when}" for k in keys for when in ("before", "after")}
        | {"accuracy gain", "call spread gain", "turns gain"}
        | {"env-token weight (max)"}
    )


def test_held_out_examples_share_the_levels_equally():
    examples = tools.held_out(CalcTask(), 12)
    assert [level(e.prompt) for e in examples[:3]] == list(LEVELS)
    assert pd.Series([level(e.prompt) for e in examples]).value_counts().tolist() == [4, 4, 4]


def test_env_weight_max_reads_only_environment_tokens():
    t = pd.DataFrame(
        {"env_mask": [[True, False], [False, True]], "weight": [[0.5, 0.0], [-0.2, 0.9]]}
    )
    assert tools.env_weight_max(t) == pytest.approx(0.2)  # the second row's env token leaks
    assert pd.isna(tools.env_weight_max(t.assign(env_mask=[[True, True]] * 2)))


def test_the_trainer_finds_its_environment_from_its_task():
    for task, env, funcs in (
        (CalcTask(), Calculator, [tool_reward]),
        (GuessTask(), GuessNumber, []),
    ):
        tr = tools.ToolsTrainer(task=task, reward_funcs=funcs, prompts_per_step=2, save_steps=0)
        assert tr.env_factory is env


def test_a_killed_run_resumes_from_its_checkpoint(runs, monkeypatch):
    """Two steps, then the same run asked for three: it resumes at step 2 (its checkpoint) with
    only the task and reward functions passed again, and its log holds each step once."""
    monkeypatch.setattr(
        tools, "SETUP", {**tools.SETUP, "prompts_per_step": 2, "num_generations": 2}
    )
    kw = {"seed": 0, "fast": True, "run_name": "g", "tick": lambda done, total: None}
    first = tools.train("guess", tools.ARMS["guess"], steps=2, **kw)
    more = tools.train("guess", tools.ARMS["guess"], steps=3, **kw)
    assert first.curves["step"].tolist() == [1, 2]
    assert more.curves["step"].tolist() == [1, 2, 3]
    assert [p.name for p in runs.iterdir()] == ["g"]  # resumed, not restarted beside it
    assert more.summary["env-token weight (max)"] == 0.0


def test_every_claim_names_a_real_arm_and_summary_column():
    columns = summary_columns()
    for c in tools.EXPERIMENT.claims:
        assert c.arm in tools.ARMS and c.baseline in (None, *tools.ARMS), c.key
        assert c.metric in columns, c.key
    assert set(tools.EXPERIMENT.live["arms"]) <= set(tools.ARMS)
