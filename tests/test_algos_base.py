"""The Trainer base on its own: the learning-rate schedule, the one optimizer step (grad norm
before clipping, then clipped), config checks before any work, ``update`` between steps.

A :class:`Linear` trainer makes the numbers closed-form: the model is w [1, 2] and the loss
w . g, so the gradient is g (norm 5 for g = (3, 4)).
"""

import math

import pytest
import torch

import labkit as lk
from labkit.algos import base
from labkit.algos.base import StepRecord, Trainer, lr_factor
from labkit.algos.config import TrainConfig
from labkit.algos.sft import SFTTrainer

G = torch.tensor([[3.0, 4.0]])  # [1, 2] the gradient of the loss: |g| = 5


class Linear(Trainer):
    """A trainer of one linear layer on the loss w . g (no task, no tokenizer needed)."""

    algorithm = "linear"

    def __init__(self, **overrides):
        model = torch.nn.Linear(2, 1, bias=False)
        super().__init__(model, task=None, tokenizer="no tokenizer", **overrides)

    def train_step(self) -> StepRecord:
        loss = (self.model.weight * G).sum()
        grad_norm = self.optimizer_step(loss)
        return StepRecord({"loss": loss.item(), "grad_norm": float(grad_norm)})


@pytest.mark.parametrize(
    "kind, steps, want",
    [
        ("linear", [0, 1, 2, 3], [0.25, 0.5, 0.75, 1.0]),  # warm-up: (s + 1) / warmup_steps
        ("linear", [4, 7, 10, 12], [1.0, 0.5, 0.0, 0.0]),  # then 1 - (s - 4) / 6, held at 0
        ("cosine", [4, 5, 7, 10], [1.0, 0.5 * (1 + math.cos(math.pi / 6)), 0.5, 0.0]),
        ("constant", [0, 3, 4, 10, 100], [0.25, 1.0, 1.0, 1.0, 1.0]),
    ],
)
def test_lr_factor_warms_up_then_decays(kind, steps, want):
    c = TrainConfig(max_steps=10, warmup_steps=4, lr_scheduler_type=kind)
    assert [lr_factor(s, c) for s in steps] == pytest.approx(want, abs=1e-12)


def test_each_step_uses_the_scheduled_learning_rate():
    tr = Linear(learning_rate=0.1, max_steps=6, warmup_steps=2, lr_scheduler_type="cosine")
    log = tr.train(progress=False)
    want = [0.1 * lr_factor(s, tr.config) for s in range(6)]
    assert list(log.metrics["lr"]) == pytest.approx(want) and list(log.metrics["step"]) == [
        1,
        2,
        3,
        4,
        5,
        6,
    ]
    assert set(log.metrics.columns) == {"step", "loss", "grad_norm", "lr", "time/step"}


@pytest.mark.parametrize(
    "max_grad_norm, norm_after", [(1.0, 1.0), (2.5, 2.5), (10.0, 5.0), (0.0, 5.0)]
)
def test_optimizer_step_records_the_norm_before_clipping_and_clips(max_grad_norm, norm_after):
    tr = Linear(max_grad_norm=max_grad_norm)
    w0 = tr.model.weight.detach().clone()
    grad_norm = tr.optimizer_step((tr.model.weight * G).sum())
    assert grad_norm.item() == pytest.approx(5.0)  # recorded before clipping
    g = tr.model.weight.grad  # [1, 2] what the optimizer stepped on
    assert g.norm().item() == pytest.approx(norm_after, rel=1e-5)
    assert torch.allclose(g / g.norm(), G / 5)  # clipping rescales, keeps the direction
    assert not torch.equal(tr.model.weight, w0)  # and the step was taken
    tr.model.weight.grad = None
    assert tr.step()["grad_norm"] == pytest.approx(5.0)


def test_optimizer_step_clips_the_tiny_policys_gradient_to_max_grad_norm(tiny):
    model, tok = tiny
    tr = SFTTrainer(model, [("12+30=", "42")], tokenizer=tok, batch_size=2, max_grad_norm=0.5)
    m = tr.step()
    clipped = torch.cat([p.grad.flatten() for p in tr.params]).norm().item()
    assert m["grad_norm"] > 0.5 and clipped == pytest.approx(0.5, rel=1e-4)


@pytest.mark.parametrize(
    "make, kw, message",
    [
        (lambda **kw: lk.GRPOTrainer(**kw), {"beta": -1.0}, "beta=-1.0"),
        (
            lambda **kw: SFTTrainer(pairs=[("1+1=", "2")], **kw),
            {"learning_rate": 0},
            "learning_rate=0",
        ),
        (lambda **kw: lk.DPOTrainer(**kw), {"lr_scheduler_type": "step"}, "lr_scheduler_type"),
    ],
)
def test_a_bad_config_is_refused_before_any_work(make, kw, message, runs, monkeypatch):
    """Refused before the model is loaded, pairs are built or the run folder is made."""

    def no_loading(*a, **k):
        raise AssertionError("the model was loaded before the config was checked")

    monkeypatch.setattr(base, "load_policy", no_loading)
    with pytest.raises(ValueError, match=message):
        make(run_name="bad", **kw)
    assert not (runs / "bad").exists() and not list(runs.iterdir())


def test_update_changes_the_learning_rate_between_steps_and_logs_an_event(runs):
    tr = Linear(learning_rate=0.1, max_steps=10, run_name="lin")
    tr.train(2, progress=False)
    with pytest.raises(ValueError, match="learning_rate=-1"):
        tr.update(learning_rate=-1)
    assert tr.config.learning_rate == 0.1
    tr.update(learning_rate=0.5)
    factor = lr_factor(2, tr.config)  # linear decay: 1 - 2/10
    assert tr.optimizer.param_groups[0]["lr"] == pytest.approx(0.5 * factor)
    m = tr.step()
    assert m["lr"] == pytest.approx(0.5 * factor)
    assert tr.step()["lr"] == pytest.approx(0.5 * lr_factor(3, tr.config))  # the schedule goes on
    run = lk.load_run(runs / "lin")
    assert run.events.to_dict("records") == [{"step": 2, "kind": "update", "learning_rate": 0.5}]
    assert list(run.metrics["lr"]) == pytest.approx([0.1, 0.09, 0.4, 0.35])
