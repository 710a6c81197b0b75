"""TRL's trainer call runs in labkit: ``trl.GRPOTrainer`` -> ``lk.GRPOTrainer`` is the one line a
TRL script changes; TRL's GRPOConfig is read field by field, what labkit lacks is named."""

import math

import pytest
from datasets import Dataset
from trl import GRPOConfig as TRLConfig

import labkit as lk
from labkit.models.policy import BUILTIN

ROWS = [{"prompt": f"{a}+{b}=", "solution": str(a + b)} for a in range(10, 20) for b in (3, 4)]
CPU = {"bf16": False, "use_cpu": True, "report_to": "none", "save_strategy": "no"}


def trl_args(tmp_path, **kw):
    base = {"num_generations": 4, "per_device_train_batch_size": 8, "max_completion_length": 4}
    return TRLConfig(output_dir=str(tmp_path / "out"), **{**CPU, **base, **kw})


def exact(completions, solution, **kwargs):
    return [float(c.strip() == s) for c, s in zip(completions, solution)]


def test_trls_config_is_read_field_by_field(tmp_path, runs):
    args = trl_args(
        tmp_path,
        num_iterations=2,
        max_steps=6,
        learning_rate=1e-4,
        beta=0.04,
        loss_type="dr_grpo",
        scale_rewards="none",
        epsilon_high=0.28,
        seed=7,
        lr_scheduler_type="cosine",
        warmup_steps=1,
        off_policy_mask_threshold=0.5,
        gradient_checkpointing=False,
        run_name="mapped",
    )
    tr = lk.GRPOTrainer(model="tiny", reward_funcs=exact, args=args, train_dataset=ROWS)
    c = tr.config
    assert (c.num_generations, c.prompts_per_step, c.max_steps) == (4, 2, 3)  # 6 optimizer steps
    assert (c.learning_rate, c.beta, c.loss_type, c.scale_rewards) == (
        1e-4,
        0.04,
        "dr_grpo",
        "none",
    )
    assert (c.epsilon_high, c.seed, c.lr_scheduler_type, c.warmup_steps) == (0.28, 7, "cosine", 1)
    assert (c.off_policy_mask, c.max_completion_length, c.precision) == (0.5, 4, "fp32")
    assert (c.save_steps, c.gradient_checkpointing, c.report_to) == (0, False, ())
    assert tr.log.path == runs / "mapped"
    epochs = lk.GRPOTrainer(
        model="tiny", reward_funcs=exact, args=trl_args(tmp_path), train_dataset=ROWS
    )
    assert epochs.config.max_steps == math.ceil(3.0 * len(epochs.task.train) / 2)  # TRL: 3 epochs
    assert epochs.config.seed == 42 and epochs.config.learning_rate == 1e-6  # TRL's defaults


@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("use_vllm", True, "its own KV-cache loop"),
        ("delta", 2.0, r"\[1 - epsilon, 1 \+ epsilon_high\]"),
        ("steps_per_generation", 2, "num_iterations optimizer steps on the whole generation"),
        ("repetition_penalty", 1.1, "temperature, top_k and top_p"),
        ("optim", "sgd", "torch's AdamW"),
    ],
)
def test_a_trl_field_labkit_lacks_is_refused_with_what_it_does_instead(
    tmp_path, field, value, says
):
    with pytest.raises(ValueError, match=f"{field}=.*{says}"):
        lk.GRPOTrainer(
            model="tiny",
            reward_funcs=exact,
            args=trl_args(tmp_path, **{field: value}),
            train_dataset=ROWS,
        )


def test_fields_with_no_effect_are_named_in_one_warning(tmp_path):
    args = trl_args(tmp_path, logging_steps=3, num_completions_to_print=2)
    with pytest.warns(UserWarning, match=r"logging_steps=3 \(labkit logs every step\)"):
        lk.GRPOTrainer(model="tiny", reward_funcs=exact, args=args, train_dataset=ROWS)


def test_unknown_names_get_the_closest_one():
    with pytest.raises(
        TypeError, match="no field 'num_generation': did you mean 'num_generations'"
    ):
        lk.GRPOTrainer("tiny", num_generation=4)
    tr = lk.GRPOTrainer("tiny", num_generations=4, prompts_per_step=2)
    with pytest.raises(TypeError, match="did you mean 'beta'"):
        tr.update(bta=0.1)
    with pytest.raises(ValueError, match=r"callbacks=\.\.\..*train\(callback="):
        lk.GRPOTrainer("tiny", callbacks=[])


def test_labkits_config_goes_where_trl_puts_args():
    cfg = lk.GRPOConfig(num_generations=4, prompts_per_step=2, max_steps=1)
    tr = lk.GRPOTrainer("tiny", ["digit_partial"], cfg)  # TRL's third positional is args
    assert tr.config == cfg and tr.task.name == "addition"
    assert lk.GRPOTrainer(model="tiny", args=cfg, train_dataset=ROWS).task.name == "trl_dataset"


def test_accuracy_only_with_a_verifier():
    small = {"num_generations": 4, "prompts_per_step": 2, "max_completion_length": 4}
    small["reward_runtime"] = "inline"  # no worker process to start three times
    plain = lk.GRPOTrainer(model="tiny", reward_funcs=exact, train_dataset=ROWS, **small)
    m = plain.step()
    assert math.isnan(m["accuracy"]) and plain.log.samples["correct"].isna().all()
    named = lk.GRPOTrainer(
        model="tiny", reward_funcs=exact, train_dataset=ROWS, verifier="exact", **small
    )
    m = named.step()
    assert m["accuracy"] == pytest.approx(named.log.samples["rewards/exact"].mean())
    own = lk.GRPOTrainer(
        model="tiny",
        reward_funcs=exact,
        train_dataset=ROWS,
        verifier=lambda completion, answer: completion.strip() == answer,
        **small,
    )
    assert own.step()["accuracy"] == pytest.approx(own.log.samples["rewards/exact"].mean())
    assert own.task.verify("13", "13")  # held-out evaluation (lk.accuracy) uses it too
    with pytest.raises(ValueError, match="verifier='acc' is not one of the reward functions"):
        lk.GRPOTrainer(model="tiny", reward_funcs=exact, train_dataset=ROWS, verifier="acc")


def reward_len(completions, **kwargs):
    """TRL's quickstart reward: completions close to 3 characters."""
    return [-abs(3 - len(c)) for c in completions]


def trl_script(GRPOTrainer, out):
    """A TRL user's script (TRL's GRPO quickstart shape), the trainer class its one variable."""
    model, tok = lk.load_policy("tiny")
    dataset = Dataset.from_list(ROWS)
    args = TRLConfig(
        output_dir=str(out),
        num_generations=4,
        per_device_train_batch_size=8,
        max_completion_length=4,
        max_steps=2,
        gradient_checkpointing=False,
        **CPU,
    )
    trainer = GRPOTrainer(
        model=model, reward_funcs=reward_len, args=args, train_dataset=dataset, processing_class=tok
    )
    trainer.train()
    return trainer


def test_a_trl_script_runs_in_labkit_with_one_line_changed(tmp_path, runs):
    from trl import GRPOTrainer

    theirs = trl_script(GRPOTrainer, tmp_path / "trl")
    assert theirs.state.global_step == 2
    ours = trl_script(lk.GRPOTrainer, tmp_path / "labkit")
    assert ours.global_step == 2 and len(ours.log.samples) == 2 * 8
    assert ours.log.samples["rewards/reward_len"].tolist() == [
        -abs(3 - len(c)) for c in ours.log.samples["completion"]
    ]
    assert (runs / "labkit" / "metrics.jsonl").exists()  # output_dir's name: the run's name
    assert str(BUILTIN["tiny"])  # the same shipped weights on both sides
