"""The three stages of RLHF end to end on the tiny policy (InstructGPT, 2203.02155, fig. 2).

1. SFT: supervised fine-tuning on demonstrations (here: prompts with their reference answers,
   ``labkit.algos.sft``), from the shipped cold-start checkpoint;
2. reward model: ranked pairs (here the task's verifier stands in for the human labeller):
   reference answers preferred to near misses of them (75 vs 74, 76, 65, ...) and to clearly
   wrong numbers, fitted with the Bradley-Terry loss. Either trained here (``rm_steps``) or the
   shipped one, made the same way by ``scripts/make_reward_model.py``. Its held-out accuracy is
   reported on the pairs RL needs it to rank, the SFT policy's own correct vs incorrect samples,
   and on clear errors;
3. RL: GRPO or PPO against the reward model's score (the verifier is no longer seen), evaluated
   on held-out prompts by the verifier. At every step :func:`agreement` compares the RM's ranking
   of the sampled completions with the verifier's: reward hacking shows as the two drifting apart.
"""

from __future__ import annotations

import copy
import random

from labkit.algos.grpo import GRPOTrainer
from labkit.algos.pairs import demonstration_pairs, near_miss_pairs, rollout_pairs
from labkit.algos.ppo import PPOTrainer
from labkit.algos.reward_model import RewardModel, load_reward_model, train_reward_model
from labkit.algos.sft import sft
from labkit.models.policy import load_policy
from labkit.runs.evaluate import accuracy
from labkit.tasks import get_task


def agreement(prompts: list[str], scores: list[float], correct: list[bool]) -> float:
    """Fraction of (correct, incorrect) completions of the same prompt that the reward model
    ranks the verifier's way, r(x, y_correct) > r(x, y_wrong); NaN when no prompt has both.

    >>> agreement(["a", "a", "a", "b"], [2.0, 1.0, 3.0, 0.0], [True, False, False, False])
    0.5
    """
    hits = total = 0
    for p in set(prompts):
        rows = [(s, ok) for q, s, ok in zip(prompts, scores, correct) if q == p]
        for s_w in (s for s, ok in rows if ok):
            for s_l in (s for s, ok in rows if not ok):
                hits, total = hits + (s_w > s_l), total + 1
    return hits / total if total else float("nan")


def watched_reward(rm: RewardModel, task, record: list):
    """``rm.as_reward()`` that also appends, per call, the RM's :func:`agreement` with the
    task's verifier on the same completions to ``record`` (the verifier never enters the reward)."""
    score = rm.as_reward()

    def reward_model(completions, prompts, answer, **kwargs):
        r = score(completions, prompts)
        ok = [task.verify(c, a) for c, a in zip(completions, answer)]
        record.append(agreement(list(prompts), r, ok))
        return r

    reward_model.labkit_inline = True  # appends to ``record`` in this process
    return reward_model


def rlhf_three_stages(
    model: str = "tiny",
    task="addition",
    sft_steps: int = 20,
    reward_model: str | None = "tiny-addition-rm",
    rm_steps: int = 800,
    rm_readout: str = "head+logprob",
    rl: str = "grpo",
    rl_steps: int = 100,
    probe: int = 500,
    seed: int = 0,
    progress: bool = False,
    **rl_overrides,
) -> dict:
    """Run SFT -> reward model -> RL; returns each stage's figures and objects.

    ``reward_model``: a shipped or saved RM to load (stage 2 done offline), or None to train one
    here for ``rm_steps`` steps from the SFT policy's network with ``rm_readout``.
    Keys: ``accuracy`` (held-out sampled accuracy after each stage: start, sft, rl),
    ``rm_heldout_accuracy``, ``rm_log`` (None when loaded), ``rl_log``, ``agreement`` (per RL
    step), ``reward_model``, ``model``, ``tokenizer``.
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
        sft(
            policy,
            tok,
            [(e.prompt, e.answer) for e in t.train],
            sft_steps,
            batch_size=64,
            learning_rate=3e-4,
            seed=seed,
            progress=progress,
        )
    out["accuracy"]["sft"] = acc()
    rm, rm_log = reward_stage(policy, tok, t, reward_model, rm_steps, rm_readout, seed, progress)
    near = rollout_pairs(policy, tok, t, t.heldout[-400:], 8, seed=seed + 1)
    clear = demonstration_pairs(t, t.heldout[-400:], seed=seed + 1)
    out.update(
        rm_heldout_accuracy={
            "clear errors": rm.accuracy(clear),
            "policy near misses": rm.accuracy(near),
        },
        rm_log=rm_log,
        reward_model=rm,
    )
    trainer, agree = rl_stage(rl, policy, tok, t, rm, rl_steps, seed, progress, rl_overrides)
    out["accuracy"]["rl"] = acc()
    out.update(rl_log=trainer.log, model=policy, tokenizer=tok, agreement=agree)
    return out


def rl_stage(rl, policy, tok, task, rm, steps, seed, progress, overrides):
    """Stage 3: (trainer, per-step DataFrame of RM/verifier agreement and verifier accuracy)."""
    cls = GRPOTrainer if rl == "grpo" else PPOTrainer
    kw = {
        "max_steps": steps,
        "seed": seed,
        "prompts_per_step": 16,
        "num_generations": 16,
        "learning_rate": 5e-4,
        "num_iterations": 2,
        **overrides,
    }
    record = []
    trainer = cls(
        policy, reward_funcs=[watched_reward(rm, task, record)], task=task, tokenizer=tok, **kw
    )
    trainer.train(progress=progress)
    import pandas as pd  # here, not at the top: `import labkit` stays free of pandas

    m = trainer.log.metrics  # one reward call per step (more with dynamic sampling)
    agree = record if len(record) == len(m) else [float("nan")] * len(m)
    return trainer, pd.DataFrame(
        {"step": m["step"], "rm_verifier_agreement": agree, "verifier_accuracy": m["accuracy"]}
    )


def reward_stage(policy, tok, task, reward_model, rm_steps, readout, seed, progress):
    """Stage 2: (rm, log) loaded by name (log None) or trained on free pairs of train prompts."""
    if reward_model is not None:
        return load_reward_model(reward_model), None
    prompts = task.sample_prompts(2048, random.Random(seed))
    train = near_miss_pairs(task, prompts, 4, seed=seed) + demonstration_pairs(
        task, prompts, seed=seed
    )
    random.Random(seed).shuffle(train)
    return train_reward_model(
        train,
        copy.deepcopy(policy),
        tok,
        max_steps=rm_steps,
        learning_rate=3e-4,
        batch_size=64,
        warmup_steps=min(30, rm_steps - 1),
        lr_scheduler_type="cosine",
        seed=seed,
        progress=progress,
        readout=readout,
    )
