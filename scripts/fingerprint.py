"""A behaviour fingerprint of every trainer: a few fixed-seed steps each, hashed.

A refactor that must not change behaviour prints the same lines before and after:

    python scripts/fingerprint.py > before.txt   # on the old code
    python scripts/fingerprint.py | diff before.txt -

Each line is one configuration: the hash of every logged metric (wall times ``time/*`` and ``*/latency`` left out),
every sample row, every per-token row and the final weights, at full float precision.
One thread, so reductions run in one order.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys

import torch

import labkit as lk
from labkit.algos.multiturn import MultiTurnGRPOTrainer
from labkit.algos.process import ProcessGRPOTrainer
from labkit.algos.verifier import train_verifier
from labkit.envs import CalcTask, Calculator, tool_reward

GROUP = {"prompts_per_step": 4, "num_generations": 4, "max_steps": 3, "save_steps": 0, "seed": 0}
PREFS = [
    {"prompt": f"{a}+{b}=", "chosen": str(a + b), "rejected": str(a + b + 1)}
    for a, b in [(12, 30), (21, 4), (7, 8), (40, 2)]
]
PAIRS = [(p["prompt"], p["chosen"]) for p in PREFS]

RUNS = {
    "grpo": lambda: lk.GRPOTrainer(**GROUP, num_iterations=2),
    "grpo-beta": lambda: lk.GRPOTrainer(**GROUP, beta=0.04, num_iterations=2),
    "dr_grpo": lambda: lk.GRPOTrainer(**GROUP, loss_type="dr_grpo", scale_rewards="none"),
    "dapo": lambda: lk.GRPOTrainer(
        **GROUP,
        loss_type="dapo",
        epsilon_high=0.28,
        dynamic_sampling=True,
        mask_truncated_completions=True,
        max_completion_length=4,
        overlong_buffer=2,
    ),
    "gspo": lambda: lk.GRPOTrainer(**GROUP, importance_sampling_level="sequence", num_iterations=2),
    "cispo": lambda: lk.GRPOTrainer(**GROUP, loss_type="cispo", epsilon_high=5.0, num_iterations=2),
    "rloo": lambda: lk.GRPOTrainer(**GROUP, advantage_estimator="rloo"),
    "reinforce": lambda: lk.GRPOTrainer(**GROUP, advantage_estimator="reinforce"),
    "tis+mask": lambda: lk.GRPOTrainer(**GROUP, tis_cap=2.0, off_policy_mask=0.5, num_iterations=2),
    "entropy": lambda: lk.GRPOTrainer(**GROUP, entropy_coef=0.01, top_k=8),
    "skip-zero": lambda: lk.GRPOTrainer(**GROUP, skip_zero_advantage=True, num_iterations=2),
    "demo": lambda: lk.GRPOTrainer(
        **{**lk.algos.config.DEMO_DEFAULTS, "max_steps": 3, "save_steps": 0}
    ),
    "scratchpad": lambda: lk.GRPOTrainer(
        "tiny-think", ["answer_match"], task="scratchpad", **GROUP
    ),
    "ppo": lambda: lk.PPOTrainer(**GROUP, beta=0.05, num_mini_batches=2),
    "ppo-entropy": lambda: lk.PPOTrainer(**GROUP, entropy_coef=0.01, kl_in_reward=False, beta=0.05),
    "process-grpo": lambda: ProcessGRPOTrainer(
        "tiny", ["answer_match"], task="scratchpad", **GROUP
    ),
    "multiturn": lambda: MultiTurnGRPOTrainer(
        "tiny-tools",
        env=Calculator,
        reward_funcs=[tool_reward],
        task=CalcTask(),
        max_completion_length=20,
        max_turns=2,
        **GROUP,
    ),
    "dpo": lambda: lk.DPOTrainer("tiny", pairs=PREFS, batch_size=2, max_steps=3, save_steps=0),
    "reward_model": lambda: lk.RewardModelTrainer(
        "tiny", pairs=PREFS, batch_size=2, max_steps=3, save_steps=0
    ),
    "sft": lambda: lk.SFTTrainer("tiny", pairs=PAIRS, batch_size=2, max_steps=3, save_steps=0),
}


def digest(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        if isinstance(p, torch.Tensor):
            h.update(p.detach().cpu().contiguous().numpy().tobytes())
        else:
            h.update(json.dumps(p, sort_keys=True, default=repr).encode())
    return h.hexdigest()[:16]


def rows(frame) -> list:
    frame = frame[
        [c for c in frame.columns if not c.startswith("time/") and not c.endswith("/latency")]
    ]
    return frame.to_dict("records")


def run(name: str) -> str:
    torch.manual_seed(0)
    random.seed(0)
    tr = RUNS[name]()
    log = tr.train(progress=False)
    weights = [p for p in tr.model.parameters()]
    return digest(rows(log.metrics), rows(log.samples), rows(log.tokens), *weights)


def verifier() -> str:
    task = lk.tasks.get_task("scratchpad")
    data = [
        (e.prompt, f"<think>{e.answer}</think><answer>{e.answer}</answer>") for e in task.train[:64]
    ]
    m, tok = lk.load_policy("tiny-think")
    v, hist = train_verifier(m, tok, data, "prm", steps=3, batch_size=8, seed=0)
    return digest(hist, *v.parameters())


def main() -> None:
    torch.set_num_threads(1)
    only = sys.argv[1:]
    for name in RUNS:
        if not only or name in only:
            print(f"{name:14s} {run(name)}", flush=True)
    if not only or "verifier" in only:
        print(f"{'verifier':14s} {verifier()}", flush=True)


if __name__ == "__main__":
    main()
