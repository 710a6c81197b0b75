"""pi_ref refreshed by the trainers (``sync_ref_model``, TR-DPO): bad settings refused with the
field and the fix; GRPO's KL to pi_ref is 0 right after a hard refresh and its KL to pi_0 is what
a run without refreshes measures; DPO's pi_ref equals what TRL's callback makes of the same
steps; a resumed run with refreshes repeats an uninterrupted one; TRL's fields map both ways."""

import types

import pytest
import torch
from accelerate import Accelerator
from trl import DPOConfig as TRLDPOConfig
from trl import GRPOConfig as TRLConfig
from trl.trainer.callbacks import SyncRefModelCallback

import labkit as lk
from labkit.integrations.trl_bridge import trl_kwargs
from labkit.models.policy import frozen_copy

PAIRS = [
    {"prompt": "12+30=", "chosen": "42", "rejected": "43"},
    {"prompt": "05+05=", "chosen": "10", "rejected": "11"},
]
SMALL = {"num_generations": 4, "prompts_per_step": 4, "diagnostics": 1, "seed": 3}
HARD = {"sync_ref_model": True, "ref_model_mixup_alpha": 1.0, "ref_model_sync_steps": 2}


def same(a: torch.nn.Module, b: torch.nn.Module) -> bool:
    """Every parameter of ``a`` equals ``b``'s, bit for bit."""
    return all(torch.equal(x, y) for x, y in zip(a.parameters(), b.parameters(), strict=True))


@pytest.mark.parametrize("config", [lk.GRPOConfig, lk.DPOConfig])
@pytest.mark.parametrize(
    ("kw", "says"),
    [
        ({"ref_model_mixup_alpha": 0.0}, r"ref_model_mixup_alpha=0.0: use 0 < alpha <= 1"),
        ({"ref_model_mixup_alpha": 1.2}, r"ref_model_mixup_alpha=1.2: .*sync_ref_model=False"),
        ({"ref_model_sync_steps": 0}, r"ref_model_sync_steps=0: use 1 or more"),
    ],
)
def test_bad_refresh_settings_are_refused(config, kw, says):
    with pytest.raises(ValueError, match=says):
        config(sync_ref_model=True, **kw)


def test_no_separate_reference_no_refresh(lora, tiny):
    lora, tok = lora
    with pytest.raises(ValueError, match=r"LoRA \(peft\) policy.*Train without LoRA"):
        lk.GRPOTrainer(lora, tokenizer=tok, beta=0.1, sync_ref_model=True, **SMALL)
    with pytest.raises(ValueError, match="LoRA"):
        lk.DPOTrainer(lora, tokenizer=tok, pairs=PAIRS, sync_ref_model=True)
    tr = lk.GRPOTrainer(lora, tokenizer=tok, beta=0.1, **SMALL)
    with pytest.raises(ValueError, match="LoRA"):
        tr.update(sync_ref_model=True)
    assert not tr.config.sync_ref_model  # refused before anything changed
    model, tok = tiny
    with pytest.raises(ValueError, match=r"keeps no reference model.*beta > 0"):
        lk.GRPOTrainer(model, tokenizer=tok, track_kl=False, sync_ref_model=True, **SMALL)


def test_grpo_after_a_hard_refresh_kl_to_pi_ref_is_zero_and_kl_to_pi_0_goes_on():
    """Hard refresh (alpha 1) after step 2: step 3 samples from the policy pi_ref now is, so its
    KL to pi_ref is 0; a run without refreshes samples the same batch (the policies agree until
    step 3's update), and its KL to pi_ref = pi_0 is the refreshed run's kl_init."""
    kw = {**SMALL, "beta": 0.1, "learning_rate": 1e-3}
    hard = lk.GRPOTrainer(**HARD, **kw)
    fixed = lk.GRPOTrainer(**kw)
    for step in (1, 2, 3):
        m, f = hard.step(), fixed.step()
        assert m["ref/refreshes"] == (0 if step < 2 else 1) and "ref/refreshes" not in f
        assert m["reward/mean"] == f["reward/mean"]  # the same samples up to step 3
        if step < 3:
            assert m["kl/k3"] == f["kl/k3"] and m["kl_init/k3"] == m["kl/k3"]
    assert step == 3 and f["kl/k3"] > 0.01
    assert m["kl/k1"] == pytest.approx(0.0, abs=1e-6) and m["kl/k3"] == pytest.approx(0.0, abs=1e-6)
    assert m["kl_init/k1"] == pytest.approx(f["kl/k1"], rel=1e-5)
    assert m["kl_init/k3"] == pytest.approx(f["kl/k3"], rel=1e-5)
    start = lk.load_policy("tiny")[0]  # pi_0 is kept as it was
    assert same(hard.ref_sync.init_model, start)


@pytest.mark.parametrize("cls", [lk.GRPOTrainer, lk.PPOTrainer, lk.TRPOTrainer])
def test_every_sampling_trainer_refreshes_after_the_due_step(cls):
    tr = cls(beta=0.1, **{**SMALL, "num_generations": 2}, **{**HARD, "ref_model_sync_steps": 1})
    start = lk.load_policy("tiny")[0]
    assert same(tr.ref_model, start)
    tr.step()  # a hard refresh after step 1: pi_ref is the policy that step made
    assert same(tr.ref_model, tr.model) and not same(tr.ref_model, start)


def test_dpo_reference_is_what_trls_callback_makes_of_the_same_steps(tmp_path):
    """TRL's callback, given TRL's own DPOConfig, beside labkit's DPO run: after every step
    (labkit's refresh included) its copy of pi_ref equals labkit's parameter for parameter."""
    kw = {"sync_ref_model": True, "ref_model_mixup_alpha": 0.6, "ref_model_sync_steps": 2}
    tr = lk.DPOTrainer(pairs=PAIRS, batch_size=2, max_steps=5, learning_rate=1e-2, **kw)
    args = TRLDPOConfig(output_dir=str(tmp_path), use_cpu=True, bf16=False, report_to="none", **kw)
    theirs = frozen_copy(tr.ref_model)  # pi_0
    callback = SyncRefModelCallback(ref_model=theirs, accelerator=Accelerator(cpu=True))

    def beside(t, m):
        state = types.SimpleNamespace(global_step=t.global_step)
        callback.on_step_end(args, state, None, model=t.model)
        assert same(t.ref_model, theirs), t.global_step

    tr.train(progress=False, callback=beside)
    assert tr.ref_sync.refreshes == 2 and list(tr.log.metrics["ref/refreshes"]) == [0, 1, 1, 2, 2]
    start = lk.load_policy("tiny")[0]
    assert not same(tr.ref_model, start)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("cls", "kw"),
    [
        (lk.GRPOTrainer, {**SMALL, "beta": 0.1, "learning_rate": 3e-3}),
        (lk.DPOTrainer, {"batch_size": 4, "pair_prompts": 48, "num_generations": 4, "seed": 3}),
    ],
)
def test_a_resumed_run_with_refreshes_repeats_an_uninterrupted_one(cls, kw, runs, resume):
    """Stopped after step 3 (one refresh in, after step 2): the checkpoint holds the refreshed
    pi_ref; rebuilt from the model's name instead, the KL to pi_ref of steps 4-5 would differ."""
    kw = {**kw, "sync_ref_model": True, "ref_model_sync_steps": 2, "save_steps": 1}  # alpha 0.6
    kw |= {"lr_scheduler_type": "constant", "max_steps": 100}
    runs_ = resume(cls, kw, 5)
    runs_.straight("straight")
    tr = runs_.stopped("stopped", at=3)
    assert tr.ref_sync.refreshes == 2
    runs_.assert_same("straight", "stopped", 5)


def test_trls_fields_map_to_labkits_and_back(tmp_path, runs):
    base = {"num_generations": 4, "per_device_train_batch_size": 8, "max_completion_length": 4}
    base |= {"bf16": False, "use_cpu": True, "report_to": "none", "save_strategy": "no"}
    args = TRLConfig(
        output_dir=str(tmp_path),
        beta=0.04,
        num_iterations=2,
        sync_ref_model=True,
        ref_model_mixup_alpha=0.8,
        ref_model_sync_steps=8,
        **base,
    )
    tr = lk.GRPOTrainer(model="tiny", args=args)
    c = tr.config
    assert (c.sync_ref_model, c.ref_model_mixup_alpha, c.ref_model_sync_steps) == (True, 0.8, 4)
    back = trl_kwargs(c)  # TRL counts optimizer steps: 4 labkit steps x mu = 2
    fields = ("sync_ref_model", "ref_model_mixup_alpha", "ref_model_sync_steps")
    assert [back[f] for f in fields] == [True, 0.8, 8]
    assert "sync_ref_model" not in trl_kwargs(lk.GRPOConfig())  # off: TRL's defaults
    odd = TRLConfig(output_dir=str(tmp_path), num_iterations=2, **HARD, **base)
    odd.ref_model_sync_steps = 5
    with pytest.raises(ValueError, match=r"ref_model_sync_steps=5 with num_iterations=2.*multiple"):
        lk.GRPOTrainer(model="tiny", args=odd)
    with pytest.raises(ValueError, match="sync_ref_model=True with beta=0"):
        trl_kwargs(lk.GRPOConfig(sync_ref_model=True))
