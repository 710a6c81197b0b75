"""Checkpoints across devices: a run saved on CUDA resumes on the CPU and one saved on the CPU
resumes on CUDA (``gpu``), with its weights, optimizer state and step; on any machine, a
checkpoint whose sampling generator belongs to another device type resumes with a fresh stream
and a warning, and an fp16 run's loss scale survives a resume (labkit.runs.checkpoint).
"""

from __future__ import annotations

import pytest
import torch

import labkit as lk
from labkit.runs import checkpoint

KW = {"prompts_per_step": 4, "num_generations": 4, "max_steps": 4, "save_steps": 1, "seed": 3}
CLS = {"grpo": lk.GRPOTrainer, "ppo": lk.PPOTrainer}


def state_on_cpu(tr) -> dict:
    """Weights and AdamW moments, on the CPU, to compare across devices."""
    moments = [s["exp_avg"] for s in tr.optimizer.state.values()]
    return {"weights": [p.detach().cpu() for p in tr.params], "m": [m.cpu() for m in moments]}


@pytest.mark.gpu
@pytest.mark.filterwarnings("ignore:the checkpoint at step")
@pytest.mark.parametrize("algo", list(CLS))
@pytest.mark.parametrize("saved, resumed", [("gpu", "cpu"), ("cpu", "gpu")])
def test_a_checkpoint_resumes_on_the_other_device(algo, saved, resumed, gpu_device, runs):
    where = {"gpu": gpu_device, "cpu": torch.device("cpu")}
    tr = CLS[algo]("tiny", run_name="r", device=where[saved], **KW)
    tr.train(2, progress=False)
    before = state_on_cpu(tr)
    tr.log.close()  # done writing: the folder's lock goes (RunLog holds it until close)
    back = CLS[algo].from_run("r", device=where[resumed])
    assert back.device.type == where[resumed].type and back.global_step == 2
    assert back.generator.device.type == back.device.type
    after = state_on_cpu(back)
    for k in before:
        assert all(torch.equal(a, b) for a, b in zip(before[k], after[k])), k
    moments = [s["exp_avg"] for s in back.optimizer.state.values()]
    assert moments and all(m.device.type == back.device.type for m in moments)
    back.train(2, progress=False)
    m = lk.load_run(runs / "r").metrics
    assert list(m["step"]) == [1, 2, 3, 4] and m["loss"].notna().all()


def test_a_generator_from_another_device_type_gives_a_fresh_stream_and_a_warning(runs):
    """Stands in for a CUDA checkpoint on this CPU: its generator state is Philox's 16 bytes,
    which a CPU generator (mt19937, 5056 bytes) refuses."""
    lk.GRPOTrainer("tiny", run_name="r", **KW).train(2, progress=False).close()
    path = checkpoint.folder(runs / "r", 2) / checkpoint.STATE
    state = torch.load(path, weights_only=False)
    assert state["generator_device"] == "cpu"
    state["generator"], state["generator_device"] = torch.zeros(16, dtype=torch.uint8), "cuda"
    torch.save(state, path)
    with pytest.warns(UserWarning, match="sampled on cuda, this trainer samples on cpu"):
        back = lk.GRPOTrainer.from_run("r")
    again = torch.Generator().manual_seed(KW["seed"] * 1_000_003 + 2)
    assert torch.equal(back.generator.get_state(), again.get_state())
    back.train(1, progress=False)
    assert back.global_step == 3


@pytest.mark.filterwarnings("ignore:Detected call of `lr_scheduler.step()`")
def test_the_fp16_loss_scale_survives_a_resume(runs):
    tr = lk.GRPOTrainer("tiny", run_name="r", precision="fp16", **KW)
    tr.train(1, progress=False)
    tr.scaler.update(1024.0)  # away from the initial 2 ** 16, so a reset would show
    tr.train(1, progress=False)
    scale = tr.scaler.get_scale()
    tr.log.close()
    back = lk.GRPOTrainer.from_run("r")
    assert back.scaler.get_scale() == scale != 2.0**16
