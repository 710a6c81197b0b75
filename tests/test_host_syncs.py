"""Host syncs per training step do not grow with batch size or completion length.

A sync is a read of device data by Python: ``.item()``, ``.tolist()``, ``.cpu()``,
``.numpy()``, ``bool()/int()/float()`` of a tensor. On a CPU they cost nothing, so they are
counted by patching those methods. Sampling asks "has every row ended?" on the GPU only at
t = 3, 7, 15, ... (``labkit.models.rollout.stop_check``); the test applies that GPU rule, so
the count may grow by log2(T) at most, and must not grow with B. Not counted (they read device
data inside C++): ``torch.unique`` finding the distinct prompts and ``torch.equal`` checking that
the groups can be packed (``labkit.models.prefix``), one each per training forward.
"""

from __future__ import annotations

import collections
import math

import pytest
import torch

import labkit as lk
import labkit.models.rollout as rollout_module

NAMES = ("item", "tolist", "cpu", "numpy", "__bool__", "__int__", "__float__")


def count_syncs(trainer) -> int:
    """Host syncs of one ``trainer.step()`` (after a warm-up step)."""
    trainer.step()
    calls = collections.Counter()
    original = {n: getattr(torch.Tensor, n) for n in NAMES}

    def counted(name):
        def method(self, *args, **kwargs):
            calls[name] += 1
            return original[name](self, *args, **kwargs)

        return method

    for n in NAMES:
        setattr(torch.Tensor, n, counted(n))
    try:
        trainer.step()
    finally:
        for n in NAMES:
            setattr(torch.Tensor, n, original[n])
    return sum(calls.values())


@pytest.mark.parametrize("algo", ["grpo", "ppo"])
def test_syncs_per_step_do_not_grow_with_batch_or_length(algo, monkeypatch):
    torch.set_num_threads(1)
    gpu_rule = rollout_module.stop_check
    monkeypatch.setattr(
        rollout_module, "stop_check", lambda dev, t: gpu_rule(torch.device("cuda"), t)
    )
    cls = {"grpo": lk.GRPOTrainer, "ppo": lk.PPOTrainer}[algo]

    def syncs(prompts, T):
        return count_syncs(
            cls(
                "tiny",
                prompts_per_step=prompts,
                num_generations=4,
                max_completion_length=T,
                num_iterations=2,
                max_steps=4,
                save_steps=0,
                diagnostics=4,
                seed=0,
            )
        )

    small, wide, long = syncs(2, 4), syncs(16, 4), syncs(2, 32)
    assert wide == small, (small, wide)
    assert small <= long <= small + math.log2(32), (small, long)
    assert small < 40  # measured: 13 (GRPO), of which 8 are in HF's attention-mask code


def test_the_count_catches_a_per_sequence_sync(monkeypatch):
    """Mutation check: a per-sample ``.item()`` in the step makes the count grow with B."""
    from labkit.algos import grpo

    score = grpo.GRPOTrainer.score

    def per_sample(self, r):
        r = score(self, r)
        _ = [x.item() for x in r.rewards]  # one sync per sequence
        return r

    monkeypatch.setattr(grpo.GRPOTrainer, "score", per_sample)
    kw = {"num_generations": 4, "max_completion_length": 4, "max_steps": 4, "save_steps": 0}
    assert count_syncs(lk.GRPOTrainer("tiny", prompts_per_step=8, **kw)) > count_syncs(
        lk.GRPOTrainer("tiny", prompts_per_step=2, **kw)
    )
