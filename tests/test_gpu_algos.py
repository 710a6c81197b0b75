"""Every trainer on CUDA, in each precision a GPU offers: steps of GRPO, PPO, DPO, the reward
model and SFT in fp32, bf16 autocast and fp16 autocast with the gradient scaler; GRPO learning
from a fixed seed in each (and with TIS in bf16); the log-prob error per precision and the TIS
weights it gives, on GPU kernels; DQN on CUDA.

The CPU versions are tests/test_precision.py, test_tis.py and test_classic_dqn.py, whose helpers
these reuse. Skipped without CUDA (the ``gpu`` marker, tests/conftest.py).
"""

from __future__ import annotations

import pytest
import torch
from test_classic_dqn import assert_dqn_solves_the_gridworld
from test_precision import MAKE

import labkit as lk
from labkit.experiments.precision import logprob_mismatch

pytestmark = pytest.mark.gpu
AUTOCAST = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step()`")  # fp16 skips
@pytest.mark.parametrize("precision", list(AUTOCAST))
@pytest.mark.parametrize("algo", list(MAKE))
def test_every_algorithm_steps_on_cuda(algo, precision, gpu_device, record_property):
    tr = MAKE[algo](precision, device=gpu_device)
    assert tr.device.type == tr.generator.device.type == gpu_device.type
    assert tr.precision == precision and (tr.scaler is not None) == (precision == "fp16")
    seen = set()  # the dtype the first linear layer computes in: autocast really runs
    first = next(m for m in tr.model.modules() if isinstance(m, torch.nn.Linear))
    first.register_forward_hook(lambda m, i, o: seen.add(o.dtype))
    before = [p.detach().clone() for p in tr.params]
    tr.train(progress=False)
    m = tr.log.metrics
    record_property("s_per_step", float(m["time/step"].median()))
    assert all(p.device.type == gpu_device.type for p in tr.params)
    assert torch.isfinite(torch.tensor(m["loss"].tolist())).all()
    assert all(torch.isfinite(p).all() for p in tr.params)
    assert any(not torch.equal(a, b) for a, b in zip(tr.params, before))  # it trained
    assert AUTOCAST[precision] in seen, seen


LEARN = {"fp32": {}, "bf16": {}, "fp16": {}, "bf16+tis": {"tis_cap": 2.0}}
LEARN_SEEDS = (0, 1, 2)


@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step()`")
@pytest.mark.parametrize("arm", list(LEARN))
def test_grpo_learns_on_cuda_from_fixed_seeds(arm, gpu_device, heldout_gain, record_property):
    """This config on the CPU (40 steps, device="cpu", seeds 0-5) gains 0.072-0.138 held-out
    accuracy on every seed. CUDA samples from another random stream, so one seed calibrated on
    the CPU says little there (seed 0 gained 0.034 on an H200): the mean over three seeds must
    gain 0.05, and the reward of the last five steps beat the first five's on average."""
    gains, rises, moved = [], [], []
    for seed in LEARN_SEEDS:
        tr = lk.GRPOTrainer(
            max_steps=40,
            prompts_per_step=8,
            num_generations=8,
            learning_rate=3e-4,
            seed=seed,
            track_kl=False,
            precision=arm.split("+")[0],
            save_steps=0,
            device=gpu_device,
            **LEARN[arm],
        )
        start = [p.detach().clone() for p in tr.params]
        before, after = heldout_gain(tr, 500)
        reward = tr.log.metrics["reward/mean"]
        gains.append(after - before)
        rises.append(float(reward[-5:].mean() - reward[:5].mean()))
        moved.append(
            float(sum((p.detach() - q).norm() ** 2 for p, q in zip(tr.params, start)).sqrt())
        )  # how far the weights went: a step that changes nothing shows here
    record_property("heldout_gain_per_seed", gains)
    record_property("reward_rise_per_seed", rises)
    record_property("weight_distance_per_seed", moved)
    record_property("s_per_step", float(tr.log.metrics["time/step"].median()))
    m = tr.log.metrics
    if "tis/weight_max" in m:
        record_property(
            "tis_weight_range", [float(m["tis/weight_min"].min()), float(m["tis/weight_max"].max())]
        )
    assert sum(gains) / len(gains) >= 0.05 and sum(rises) > 0, (gains, rises)


def test_logprob_error_and_tis_weights_on_cuda_follow_the_mantissa(gpu_device, record_property):
    """labkit.experiments.precision (lab 51) on GPU kernels: sampler (cached decoding) vs
    trainer (packed forward) in one precision, low precision vs fp32, and the TIS weights."""
    model, tok = lk.load_policy("tiny")
    model.to(gpu_device)
    task = lk.get_task("addition")
    prompts = [e.prompt for e in task.heldout[:64] for _ in range(4)]
    rows = {
        p: logprob_mismatch(model, tok, prompts, p, task.max_answer_chars + 1)
        for p in ("fp32", "fp16", "bf16")
    }
    for p, row in rows.items():
        record_property(p, {k: v for k, v in row.items() if k != "precision"})
    fp32 = rows["fp32"]
    assert fp32["|dlogp|"] < 1e-4 and fp32["|dlogp| vs fp32"] < 1e-6  # CPU: 6.6e-7 and 0
    assert max(fp32["w max"] - 1, 1 - fp32["w min"]) < 1e-3
    assert 1e-5 < rows["fp16"]["|dlogp| vs fp32"] < rows["bf16"]["|dlogp| vs fp32"]


@pytest.mark.parametrize("seed", [0, 1])
def test_dqn_solves_the_gridworld_on_cuda(seed, gpu_device, record_property):
    net, stats = assert_dqn_solves_the_gridworld(seed, gpu_device)
    assert next(net.parameters()).device.type == gpu_device.type
    record_property("q_error", [stats["q_error"][0], stats["q_error"][-1]])
