"""TRL trainers on the tiny policy feed labkit's run log; labkit configs map to TRL's."""

import math

import pytest
import torch
from datasets import Dataset

import labkit as lk
from labkit.integrations.trl_bridge import RunLogCallback, trl_config, trl_kwargs
from labkit.models.policy import BUILTIN

P, G, STEPS = 2, 4, 3


def _data(n=16):
    task = lk.get_task("addition")
    ex = task.train[:n]
    return Dataset.from_dict({"prompt": [e.prompt for e in ex], "answer": [e.answer for e in ex]})


def _grpo_trainer(tmp_path, cb, attach=False, **over):
    from trl import GRPOTrainer

    cfg = lk.GRPOConfig(
        num_generations=G,
        prompts_per_step=P,
        max_completion_length=4,
        max_steps=STEPS,
        beta=0.04,
        learning_rate=1e-3,
        reward_weights=[1.0, 0.5],
    )
    args = trl_config(cfg, output_dir=str(tmp_path), **over)
    trainer = GRPOTrainer(
        model=str(BUILTIN["tiny"]),
        args=args,
        train_dataset=_data(),
        reward_funcs=[lk.exact_match, lk.digit_partial],
        callbacks=[] if attach else [cb],
        processing_class=lk.load_policy("tiny")[1],
    )
    if attach:
        cb.attach(trainer)
    return trainer


def test_grpo_run_lands_in_the_run_log_with_completions_rewards_and_advantages(tmp_path):
    cb = RunLogCallback()  # not attached: completions come from TRL's parquet files
    trainer = _grpo_trainer(tmp_path, cb)
    assert not trainer.args.bf16 and trainer.args.use_cpu  # CPU-safe defaults, no GPU here
    assert not trainer.model.is_gradient_checkpointing
    trainer.train()
    m, s = cb.log.metrics, cb.log.samples
    assert list(m["step"]) == [1, 2, 3]
    for key in (
        "reward/mean",
        "kl/k3",
        "len/mean",
        "entropy",
        "grad_norm",
        "lr",
        "rewards/exact_match/mean",
        "rewards/digit_partial/mean",
        "adv/frac_zero_std",
    ):
        assert m[key].notna().all(), key
    assert (m["trl/reward"] == m["reward/mean"]).all()
    # every completion of every step, with TRL's own rewards and advantages
    assert len(s) == STEPS * P * G and sorted(s["step"].unique()) == [1, 2, 3]
    ours = lk.exact_match(
        list(s["completion"]),
        answer=[
            next(e.answer for e in lk.get_task("addition").train if e.prompt == p)
            for p in s["prompt"]
        ],
    )
    assert list(s["rewards/exact_match"]) == ours  # the completions are the scored ones
    total = s["rewards/exact_match"] + 0.5 * s["rewards/digit_partial"]
    assert torch.allclose(torch.tensor(s["reward"].values), torch.tensor(total.values))
    # TRL's advantages are group z-scores of the weighted reward: zero mean in each group
    for _, grp in s.groupby(["step", "group"]):
        assert abs(grp["advantage"].mean()) < 1e-5
        spread = grp["reward"].std()  # TRL: (r - mean) / (std + 1e-4), n-1 std
        want = (grp["reward"] - grp["reward"].mean()) / (spread + 1e-4)
        assert torch.allclose(
            torch.tensor(grp["advantage"].values), torch.tensor(want.values), atol=1e-4
        )
    # the step's mean reward TRL logged is the mean of the completions we recorded
    per_step = s.groupby("step")["reward"].mean()
    assert all(
        math.isclose(per_step[k], v, abs_tol=1e-5) for k, v in zip(m["step"], m["reward/mean"])
    )


def test_labkit_figures_dashboard_and_report_render_a_trl_run(tmp_path, monkeypatch):
    monkeypatch.setenv("LABKIT_RUNS", str(tmp_path / "runs"))
    from labkit.plots.report import report
    from labkit.widgets.dashboard import LiveFigure

    calls = []
    cb = RunLogCallback("trl-run-test", on_record=lambda log, row: calls.append(row["step"]))
    _grpo_trainer(tmp_path / "out", cb, attach=True).train()
    assert calls == [1, 2, 3]
    s = cb.log.samples  # attached: each step's completions as it is logged
    assert list(s["step"]) == [k for k in (1, 2, 3) for _ in range(P * G)]
    groups = s.groupby(["step", "group"])["advantage"].mean()
    assert (groups.abs() < 1e-5).all()
    live = LiveFigure(cb.log)
    live.refresh()
    by_name = {t.name: t for t in live.fig.data}
    assert list(by_name["reward (total)"].y) == list(cb.log.metrics["reward/mean"])
    assert list(by_name["k3"].y) == list(cb.log.metrics["kl/k3"])
    assert lk.plots.training.length_distribution(cb.log).data
    on_disk = lk.load_run(cb.log.path)  # the run folder reads back like a labkit run
    assert len(on_disk.samples) == STEPS * P * G and on_disk.config["trainer"] == "grpo"
    assert report(on_disk, tmp_path / "r.html", {}).exists()


def test_rloo_and_dpo_logs_are_mapped(tmp_path):
    from trl import DPOConfig, DPOTrainer, RLOOConfig, RLOOTrainer

    tok = lk.load_policy("tiny")[1]
    common = {
        "bf16": False,
        "use_cpu": True,
        "report_to": [],
        "max_steps": 2,
        "logging_steps": 1,
        "save_strategy": "no",
        "disable_tqdm": True,
        "activation_checkpointing": False,
    }
    cb = RunLogCallback()
    args = RLOOConfig(
        output_dir=str(tmp_path / "rloo"),
        per_device_train_batch_size=8,
        num_generations=4,
        max_completion_length=4,
        log_completions=True,
        beta=0.05,
        **common,
    )
    cb.attach(
        RLOOTrainer(
            model=str(BUILTIN["tiny"]),
            reward_funcs=lk.digit_partial,
            args=args,
            train_dataset=_data(),
            processing_class=tok,
        )
    ).trainer.train()
    m = cb.log.metrics
    assert list(m["step"]) == [1, 2] and m["kl/k1"].notna().all() and "kl/k3" not in m
    assert len(cb.log.samples) == 2 * 8 and cb.log.samples["advantage"].notna().all()

    ex = lk.get_task("addition").train[:8]
    pairs = Dataset.from_dict(
        {
            "prompt": [e.prompt for e in ex],
            "chosen": [e.answer for e in ex],
            "rejected": [str(int(e.answer) + 1) for e in ex],
        }
    )
    cb = RunLogCallback()
    DPOTrainer(
        model=str(BUILTIN["tiny"]),
        args=DPOConfig(output_dir=str(tmp_path / "dpo"), per_device_train_batch_size=4, **common),
        train_dataset=pairs,
        processing_class=tok,
        callbacks=[cb],
    ).train()
    m = cb.log.metrics
    assert list(m["step"]) == [1, 2]
    assert (m["reward/mean"] == m["trl/rewards/margins"]).all() and m["accuracy"].notna().all()
    assert m["dpo/logp_chosen"].notna().all() and cb.log.samples.empty


def test_trl_config_maps_names_and_refuses_what_trl_lacks():
    cfg = lk.GRPOConfig(
        num_generations=8,
        prompts_per_step=4,
        num_iterations=2,
        max_steps=50,
        loss_type="cispo",
        epsilon_high=5.0,
        beta=0.04,
        temperature=0.7,
    )
    a = trl_config(cfg, output_dir="x", num_processes=4)
    assert (a.per_device_train_batch_size, a.max_steps, a.num_iterations) == (8, 100, 2)
    assert (a.loss_type, a.epsilon_high, a.beta, a.temperature) == ("cispo", 5.0, 0.04, 0.7)
    assert trl_kwargs(cfg)["max_completion_length"] == 256  # no task, no length: TRL-like
    short = lk.GRPOConfig(max_completion_length=None)
    assert trl_kwargs(short, task=lk.get_task("addition"))["max_completion_length"] == 4
    with pytest.raises(ValueError, match="loss_type='reinforce'"):
        trl_kwargs(lk.GRPOConfig(loss_type="reinforce"))
    with pytest.raises(ValueError, match="kl_estimator='k2'"):
        trl_kwargs(lk.GRPOConfig(beta=0.1, kl_estimator="k2"))
    with pytest.raises(ValueError, match="num_processes=3"):
        trl_kwargs(lk.GRPOConfig(num_generations=4, prompts_per_step=4), num_processes=3)
