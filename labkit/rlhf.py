"""The three stages of RLHF end to end on the tiny policy (InstructGPT, 2203.02155, fig. 2).

1. SFT: supervised fine-tuning on demonstrations (here: prompts with their reference answers,
   ``labkit.sft``), from the shipped cold-start checkpoint;
2. reward model: ranked pairs (here the task's verifier stands in for the human): the SFT
   policy's own correct > incorrect completions, and reference answers > clearly wrong numbers,
   fitted with the Bradley-Terry loss. Its held-out accuracy is reported on both kinds: the
   policy's near misses (38+37: 75 vs 74) are much harder to rank than clear errors;
3. RL: GRPO or PPO against the reward model's score (the verifier is no longer seen), evaluated
   on held-out prompts by the verifier, so reward hacking of the RM shows as a gap.
"""

from __future__ import annotations

import copy
import random

from labkit.evaluate import accuracy
from labkit.models import load_policy
from labkit.pairs import demonstration_pairs, rollout_pairs
from labkit.ppo import PPOTrainer
from labkit.reward_model import train_reward_model
from labkit.sft import sft
from labkit.tasks import get_task
from labkit.trainer import GRPOTrainer


def rlhf_three_stages(model: str = "tiny", task: str = "addition", sft_steps: int = 20,
                      rm_prompts: int = 2048, rm_steps: int = 300, rl: str = "grpo",
                      rl_steps: int = 30, probe: int = 500, seed: int = 0,
                      progress: bool = False, **rl_overrides) -> dict:
    """Run SFT -> reward model -> RL; returns each stage's figures and objects.

    Keys: ``accuracy`` (held-out sampled accuracy after each stage: start, sft, rl),
    ``rm_heldout_accuracy``, ``rm_log``, ``rl_log``, ``reward_model``, ``model``, ``tokenizer``.
    """
    if rl not in ("grpo", "ppo"):
        raise ValueError(f"rl={rl!r}: use 'grpo' or 'ppo'")
    policy, tok = load_policy(model)
    t = get_task(task)
    heldout = t.heldout[:probe]

    def acc():
        return accuracy(policy, tok, t, heldout, temperature=1.0, seed=seed + 7)

    out = {"accuracy": {"start": acc()}}
    if sft_steps:  # stage 1
        sft(policy, tok, [(e.prompt, e.answer) for e in t.train], sft_steps, batch_size=64,
            learning_rate=3e-4, seed=seed, progress=progress)
    out["accuracy"]["sft"] = acc()
    rng = random.Random(seed)  # stage 2: the SFT policy's completions, ranked by the labeller
    prompts = t.sample_prompts(rm_prompts, rng)
    train = (rollout_pairs(policy, tok, t, prompts, 8, seed=seed)
             + demonstration_pairs(t, prompts, seed=seed))
    rng.shuffle(train)
    near = rollout_pairs(policy, tok, t, t.heldout[-400:], 8, seed=seed + 1)
    clear = demonstration_pairs(t, t.heldout[-400:], seed=seed + 1)
    rm, rm_log = train_reward_model(train, copy.deepcopy(policy), tok, heldout=clear,
                                    max_steps=rm_steps, seed=seed, progress=progress)
    out.update(rm_heldout_accuracy={"clear errors": rm.accuracy(clear),
                                    "policy near misses": rm.accuracy(near)},
               rm_log=rm_log, reward_model=rm)
    cls = GRPOTrainer if rl == "grpo" else PPOTrainer  # stage 3
    kw = {"max_steps": rl_steps, "seed": seed, "prompts_per_step": 8, "num_generations": 8,
          "learning_rate": 3e-4, **rl_overrides}
    trainer = cls(policy, reward_funcs=[rm.as_reward()], task=task, tokenizer=tok, **kw)
    trainer.train(progress=progress)
    out["accuracy"]["rl"] = acc()
    out.update(rl_log=trainer.log, model=policy, tokenizer=tok)
    return out
