"""Lab 93, distillation with more steps: the pipeline's stage 2 and 3 again (same seed, same
numbers), the student base, then SFT of the student on the kept traces for 40 and 200 steps.

    OMP_NUM_THREADS=1 python scripts/lab93_longer_distillation.py   # ~6 min on one thread
"""

import copy
import random

import torch

torch.set_num_threads(1)
from labkit.algos.rejection import rejection_sample
from labkit.experiments import r1_pipeline as r1
from labkit.experiments.r1_pipeline import probe
from labkit.models.policy import load_policy
from labkit.tasks import get_task
from labkit.tasks.scratchpad import target

task, seed = get_task("scratchpad"), 0
b = r1.budget(False)
cold, tok = load_policy("tiny-think")
t = r1.rl(cold, tok, b["rl1"], seed, "2 reasoning RL")
rng = random.Random(seed)
rs = rejection_sample(
    t.model,
    tok,
    task,
    [rng.choice(task.train) for _ in range(b["rs_prompts"])],
    4,
    keep="correct_think",
    seed=seed,
    max_completion_length=64,
)
print("rs", rs.stats(), flush=True)
m, _ = r1.student_policy(seed)
direct = [(e.prompt, target(task.operands(e.prompt), think=False)) for e in task.train]
base = r1.sft_on(m, tok, direct, b["pretrain"], seed, "student base", lr=3e-3).model
print("base", probe(base, tok, task, 400, seed + 1), flush=True)
for steps, lr in [(40, 3e-3), (200, 1e-3), (200, 3e-3)]:
    d = r1.sft_on(copy.deepcopy(base), tok, rs.pairs, steps, seed, f"distil-{steps}-{lr}", lr=lr)
    print("distilled", steps, lr, probe(d.model, tok, task, 400, seed + 1), flush=True)
