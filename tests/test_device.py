"""Every tensor of a training step is created on the model's device.

The suite runs without a GPU, so three checks stand in for one:
1. static: every tensor constructor (``torch.zeros``, ``torch.tensor``, ``torch.Generator``, ...)
   in the training path names its device (an AST walk; a planted bad constructor fails it);
2. runtime: a real step of every trainer, with a TorchFunctionMode that records each factory
   call made from labkit code without ``device=``;
3. the loss / advantage / update path of every algorithm on ``meta`` tensors (forward and
   backward; a CPU tensor meeting a meta one raises) and on fake-CUDA tensors (forward: the
   fake-CUDA backward aborts a CPU-only torch build), so a wrong-device tensor there raises.
"""

from __future__ import annotations

import ast
import pathlib

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.overrides import TorchFunctionMode

import labkit as lk
from labkit.algos.config import GRPOConfig
from labkit.core import (
    bradley_terry_loss,
    dpo_loss,
    gae,
    group_advantages,
    kl_estimate,
    policy_loss,
    rloo_advantages,
    value_loss,
    whiten,
)
from labkit.core.logprobs import masked_mean, token_logprobs
from labkit.core.options import LOSS_TYPES
from labkit.models.device import choose_precision, resolve_device

ROOT = pathlib.Path(lk.__file__).parent
TRAINING_PATH = ("models", "algos", "core", "runs")
TRAINING_FILES = ("classic/dqn.py",)  # the one classic/ learner with a network and a device
FACTORIES = {
    "zeros",
    "ones",
    "empty",
    "full",
    "arange",
    "tensor",
    "as_tensor",
    "randperm",
    "rand",
    "randn",
    "randint",
    "eye",
    "linspace",
    "Generator",
}


def constructors_without_device(source: str) -> list[tuple[int, str]]:
    """(line, name) of each ``torch.<factory>(...)`` call that does not name a device
    (``device=``; ``torch.Generator`` may take it positionally)."""
    bad = []
    for node in ast.walk(ast.parse(source)):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "torch"
            and node.func.attr in FACTORIES
        ):
            continue
        named = any(k.arg == "device" for k in node.keywords)
        if not named and not (node.func.attr == "Generator" and node.args):
            bad.append((node.lineno, node.func.attr))
    return bad


def test_every_constructor_in_the_training_path_names_its_device():
    paths = [p for d in TRAINING_PATH for p in sorted((ROOT / d).rglob("*.py"))]
    paths += [ROOT / f for f in TRAINING_FILES]
    found = {str(p.relative_to(ROOT)): constructors_without_device(p.read_text()) for p in paths}
    assert {k: v for k, v in found.items() if v} == {}


def test_the_static_check_catches_a_planted_bad_constructor():
    good = "import torch\nx = torch.zeros(3, device=y.device)\ng = torch.Generator(dev)\n"
    assert constructors_without_device(good) == []
    bad = good + "done = torch.zeros(B, dtype=torch.bool)\ng = torch.Generator()\n"
    assert constructors_without_device(bad) == [(4, "zeros"), (5, "Generator")]
    real = (ROOT / "models" / "rollout.py").read_text()
    mutated = real.replace(
        "torch.zeros(B, dtype=torch.bool, device=dev)", "torch.zeros(B, dtype=torch.bool)"
    )
    assert mutated != real and len(constructors_without_device(mutated)) == 1


class FactoryCalls(TorchFunctionMode):
    """Records factory calls without ``device=`` made directly from labkit's own code."""

    def __init__(self):
        super().__init__()
        self.bad = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name in FACTORIES and "device" not in kwargs:
            import sys

            caller = sys._getframe(1).f_code.co_filename
            if caller.startswith(str(ROOT)):
                self.bad.append((caller, name))
        return func(*args, **kwargs)


def _trainers():
    pairs = [("1+1=", "2"), ("2+3=", "5")]
    prefs = [{"prompt": "1+1=", "chosen": "2", "rejected": "3"}] * 2
    small = {"max_steps": 2, "save_steps": 0}
    g = dict(prompts_per_step=2, num_generations=4, **small)
    return {
        "grpo": lambda: lk.GRPOTrainer("tiny", num_iterations=2, **g),
        "ppo": lambda: lk.PPOTrainer("tiny", **g),
        "dpo": lambda: lk.DPOTrainer("tiny", pairs=prefs, batch_size=2, **small),
        "reward_model": lambda: lk.RewardModelTrainer("tiny", pairs=prefs, batch_size=2, **small),
        "sft": lambda: lk.SFTTrainer("tiny", pairs=pairs, batch_size=2, **small),
    }


@pytest.mark.parametrize("algo", list(_trainers()))
def test_a_real_step_creates_no_tensor_without_a_device(algo):
    torch.set_num_threads(1)
    trainer = _trainers()[algo]()
    assert trainer.device == torch.device("cpu") and trainer.generator.device == trainer.device
    with FactoryCalls() as mode:
        trainer.step()
    assert mode.bad == []


def test_auto_device_and_precision_on_this_machine():
    assert resolve_device("auto") == torch.device("cpu")  # no GPU here
    t = lk.GRPOTrainer("tiny", device="auto", max_steps=1, save_steps=0)
    assert t.device.type == "cpu" and t.precision == "fp32" and t.scaler is None


def _grpo_path(dev, requires_grad: bool):
    """GRPO-family advantages and every loss type on ``dev``; returns the losses."""
    B, T, G = 8, 5, 4
    rewards = torch.rand(B, device=dev)
    logp = torch.randn(B, T, device=dev, requires_grad=requires_grad)
    old, ref = torch.randn(B, T, device=dev), torch.randn(B, T, device=dev)
    mask = torch.ones(B, T, device=dev)
    out = []
    for adv in (group_advantages(rewards, G), rloo_advantages(rewards, G)):
        for lt in LOSS_TYPES:
            eps_high = 5.0 if lt == "cispo" else None
            loss, _ = policy_loss(
                logp,
                old,
                adv,
                mask,
                loss_type=lt,
                ref_logp=ref,
                beta=0.1,
                max_completion_length=T,
                epsilon_high=eps_high,
            )
            out.append(loss)
    seq, _ = policy_loss(logp, old, adv, mask, importance_sampling_level="sequence")
    return out + [seq]


def _ppo_path(dev, requires_grad: bool):
    B, T = 4, 5
    old, ref = torch.randn(B, T, device=dev), torch.randn(B, T, device=dev)
    values = torch.randn(B, T, device=dev, requires_grad=requires_grad)
    mask = torch.ones(B, T, device=dev)
    r_t = -0.1 * kl_estimate(old, ref, "k1") * mask  # [B, T]
    if dev == "meta":
        adv, ret = gae(r_t, values.detach(), mask, 1.0, 0.95)
    else:  # GAE's backward loop of indexed writes aborts on fake CUDA in a CPU-only torch build
        adv, ret = r_t.cumsum(-1), r_t + values.detach()
    logp = torch.randn(B, T, device=dev, requires_grad=requires_grad)
    pl, _ = policy_loss(logp, old, whiten(adv, mask), mask)
    vl, _ = value_loss(values, values.detach(), ret, mask, 0.2)
    return [pl + 0.1 * vl]


def _pairs_path(dev, requires_grad: bool):
    B, T, V = 4, 3, 11
    logits = torch.randn(2 * B, T, V, device=dev, requires_grad=requires_grad)
    ids = torch.randint(0, V, (2 * B, T), device=dev)
    mask = torch.ones(2 * B, T, device=dev)
    lp = token_logprobs(logits, ids)  # [2B, T]
    w, lo = (lp * mask).sum(-1).chunk(2)
    dpo, _ = dpo_loss(w, lo, w.detach(), lo.detach(), 0.1)
    bt, _ = bradley_terry_loss(w, lo)
    sft = -masked_mean(lp, mask)
    return [dpo, bt, sft]


PATHS = {"grpo_family": _grpo_path, "ppo": _ppo_path, "dpo_rm_sft": _pairs_path}


@pytest.fixture
def no_data_checks(monkeypatch):
    """GAE validates its mask on the host (``(mask[:, 1:] > mask[:, :-1]).any()``: one sync a
    step on a GPU); meta and fake tensors hold no data, so that check alone is skipped."""
    import labkit.core.advantages as adv

    monkeypatch.setattr(adv, "_check_prefix", lambda mask, dtype: mask.to(dtype))


@pytest.mark.parametrize("path", list(PATHS))
def test_loss_paths_run_forward_and_backward_on_meta(path, no_data_checks):
    losses = PATHS[path]("meta", True)
    assert all(x.device.type == "meta" for x in losses)
    sum(losses).backward()


@pytest.mark.parametrize("path", list(PATHS))
def test_loss_paths_stay_on_fake_cuda(path, no_data_checks):
    with FakeTensorMode():
        losses = PATHS[path]("cuda", False)
        assert all(x.device.type == "cuda" for x in losses)


def test_meta_catches_a_cpu_tensor_in_the_loss_path():
    logp = torch.randn(4, 3, device="meta")
    with pytest.raises(RuntimeError, match="device"):
        policy_loss(logp, logp, torch.zeros(4), torch.ones(4, 3))  # advantages on the CPU


def test_precision_follows_the_compute_capability(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    for cap, want in (((7, 5), "fp16"), ((8, 0), "bf16"), ((9, 0), "bf16"), ((6, 1), "fp32")):
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda d=None, c=cap: c)
        monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)  # T4 lies
        assert choose_precision("cuda", "auto") == want, cap
    assert choose_precision("cuda", "fp32") == "fp32"
    assert choose_precision("cpu", "auto") == "fp32"
    with pytest.raises(ValueError, match="precision"):
        GRPOConfig(precision="fp8")


def test_dqn_takes_a_device_and_creates_every_tensor_on_it(monkeypatch):
    from labkit.classic import dqn
    from labkit.classic.envs import gridworld

    assert dqn.resolve_device("auto") == resolve_device("auto") == torch.device("cpu")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert dqn.resolve_device("auto") == resolve_device("auto") == torch.device("cuda")
    monkeypatch.undo()
    with FactoryCalls() as mode:
        net, stats = dqn.train_dqn(
            gridworld(), dqn.DQNConfig(total_timesteps=250, learning_starts=50), device="auto"
        )
    assert mode.bad == [] and len(stats["loss"]) == 201
    assert next(net.parameters()).device == torch.device("cpu")
    assert dqn.q_table(net, gridworld().n_states).shape == (gridworld().n_states, 4)
