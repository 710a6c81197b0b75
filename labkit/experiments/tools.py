"""Lab 60: tools and turns. RL on multi-turn episodes with the environment's tokens masked.

CLAIM: with the environment's tokens masked out of the loss (TRL's ``env_mask``), GRPO on
whole episodes (a) raises the calculator policy's accuracy and teaches it *when* to call the
tool (the call rate tracks the prompt's difficulty), and (b) makes the guessing game's episodes
shorter (fewer turns per episode).

Two arms, one per environment, each from the ``tiny-tools`` cold start on the same seeds:
the calculator (``tool_reward``: answer right minus 0.3 per call) and the guessing game
(``GuessNumber.get_reward``: falls with each turn). :func:`probe` measures a policy on held-out
episodes (per level: accuracy, tool-call rate) before and after RL, with the run's seed;
:func:`env_weight_max` reads from the run log the largest loss weight any environment-written
token got.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from labkit.algos.multiturn import MultiTurnGRPOTrainer
from labkit.envs import ENVS, tool_reward
from labkit.envs.calculator import LEVELS, level
from labkit.envs.guess import MAX_GUESSES
from labkit.experiments.arms import grpo_run
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, Outcome
from labkit.models.episode import episodes
from labkit.models.policy import load_policy

CLAIM = (
    "RL on multi-turn episodes, with the tool's tokens masked out of the loss (Search-R1, "
    "arXiv 2503.09516, 'retrieved token masking'; ReTool, arXiv 2504.11536; TRL 1.16 "
    "env_mask), teaches a policy when to call a tool and raises its accuracy. On the toy: "
    "GRPO raises the calculator policy's accuracy, its tool-call rate comes to track the "
    "prompt's difficulty, and the guessing game's turns per episode fall."
)

MAX_TURNS = {"calculator": 2, "guess": MAX_GUESSES + 1}
"""Policy turns per episode: one call and an answer; the guesses and one more turn to stop."""
MAX_LEN = {"calculator": 20, "guess": 6 * (MAX_GUESSES + 1)}
"""Tokens per episode (policy and environment): the tiny policy sees at most 64 positions."""
PROBE = {"calculator": 384, "guess": 256, "fast": 24}
"""Held-out episodes per probe (calculator: a third per level; s.e. of a level's rate <= 0.045)."""


def probe(
    model, tokenizer, env: str = "calculator", n: int = 192, seed: int = 0, temperature: float = 1.0
) -> dict:
    """Held-out episodes sampled at ``temperature``: for the calculator, accuracy and tool-call
    rate per level (``acc/easy``, ``calls/hard``, ...); for the guessing game, found rate
    (``accuracy``), ``turns`` (guesses per episode) and mean reward. Every example of the
    held-out split, cycled to ``n``."""
    env_cls, task_cls = ENVS[env]
    task = task_cls()
    examples = held_out(task, n)
    envs = [env_cls() for _ in examples]
    r = episodes(
        model,
        tokenizer,
        [e.prompt for e in examples],
        envs,
        columns=[{"prompt": e.prompt, "answer": e.answer} for e in examples],
        protocol=task.protocol,
        max_completion_length=MAX_LEN[env],
        max_turns=MAX_TURNS[env],
        temperature=temperature,
        generator=torch.Generator(next(model.parameters()).device).manual_seed(seed),
    )
    ok = [task.verify(c, e.answer) for c, e in zip(r.completions, examples)]
    calls = r.tool_calls.tolist()
    out = {"accuracy": sum(ok) / n, "call_rate": sum(c > 0 for c in calls) / n}
    if env == "calculator":
        for lv in LEVELS:
            rows = [i for i, e in enumerate(examples) if level(e.prompt) == lv]
            out[f"acc/{lv}"] = sum(ok[i] for i in rows) / len(rows)
            out[f"calls/{lv}"] = sum(calls[i] > 0 for i in rows) / len(rows)
        out["call spread"] = out["calls/hard"] - out["calls/easy"]
    else:
        out["turns"] = sum(calls) / n
        out["reward"] = sum(env.get_reward() for env in envs) / n
    return out


def held_out(task, n: int) -> list:
    """``n`` held-out examples, the levels of a calculator task in equal shares, each level's
    examples cycled in order (the guessing game: its secrets cycled)."""
    pools = (
        [[e for e in task.heldout if level(e.prompt) == lv] for lv in LEVELS]
        if hasattr(task, "by_level")
        else [task.heldout]
    )
    return [pools[i % len(pools)][(i // len(pools)) % len(pools[i % len(pools)])] for i in range(n)]


class ToolsTrainer(MultiTurnGRPOTrainer):
    """A :class:`MultiTurnGRPOTrainer` whose environment defaults to its task's (``ENVS``), so
    a run resumes from its checkpoint with only the task and reward functions passed again."""

    def __init__(self, model="tiny-tools", env=None, reward_funcs=(), task=None, **kwargs):
        if env is None and task is not None:
            env = next((e for e, t in ENVS.values() if isinstance(task, t)), None)
        super().__init__(model, env=env, reward_funcs=reward_funcs, task=task, **kwargs)


SETUP = {
    "num_generations": 8,
    "prompts_per_step": 8,
    "learning_rate": 3e-4,
    "beta": 0.0,
    "diagnostics": 16,
}
"""Multi-turn GRPO on either environment: 8 prompts x 8 episodes a step."""
ARMS = {"calculator": {"env": "calculator"}, "guess": {"env": "guess"}}


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One environment on one seed: probe, multi-turn GRPO from ``tiny-tools``, probe again."""
    env = settings["env"]
    n = PROBE["fast" if fast else env]
    before = probe(*load_policy("tiny-tools"), env, n, seed + 1)
    trainer = grpo_run(
        "tiny-tools",
        {"max_completion_length": MAX_LEN[env], "max_turns": MAX_TURNS[env]},
        seed=seed,
        steps=steps,
        run_name=run_name,
        tick=tick,
        trainer_cls=ToolsTrainer,
        reward_funcs=(tool_reward,) if env == "calculator" else (),
        task=ENVS[env][1](),
        track_kl=False,
        save_steps=max(1, steps // 3),
        **SETUP,
    )
    after = probe(trainer.model, trainer.tokenizer, env, n, seed + 1)
    summary = {
        f"{k} {when}": v for when, p in (("before", before), ("after", after)) for k, v in p.items()
    }
    for k in ("accuracy", "call spread", "turns"):
        if k in before:
            summary[f"{k} gain"] = after[k] - before[k]
    summary["env-token weight (max)"] = env_weight_max(trainer.log.tokens)
    trainer.log.close()  # the run is done: its folder is free for a later resume
    return Outcome(summary, trainer.log.metrics)


def env_weight_max(tokens: pd.DataFrame) -> float:
    """The largest |loss weight| any environment-written token got in the run's per-token log
    (``env_mask`` 0); 0.0 when the environment's tokens are masked out of the loss.

    >>> t = pd.DataFrame({"env_mask": [[True, False, True]], "weight": [[0.3, 0.0, 0.3]]})
    >>> env_weight_max(t)
    0.0
    """
    w = [
        abs(x)
        for mask, weight in zip(tokens["env_mask"], tokens["weight"])
        for m, x in zip(mask, weight)
        if not m
    ]
    return float(np.max(w)) if w else float("nan")


def level_table(summaries: pd.DataFrame) -> pd.DataFrame:
    """Calculator: call rate and accuracy per (phase, level), means over seeds, with the
    half-width of their 95 % t interval (``± call_rate``, ``± accuracy``), for the bar figure."""
    from scipy import stats

    s = summaries[summaries["arm"] == "calculator"]
    rows = []
    for ph in ("before", "after"):
        for lv in LEVELS:
            row = {"phase": ph, "level": lv}
            for name, key in (("call_rate", "calls"), ("accuracy", "acc")):
                v = s[f"{key}/{lv} {ph}"].dropna()
                half = stats.sem(v) * stats.t.ppf(0.975, len(v) - 1) if len(v) > 1 else 0.0
                row |= {name: v.mean(), f"± {name}": half}
            rows.append(row)
    return pd.DataFrame(rows).set_index(["phase", "level"])


SOURCE = (
    "Search-R1 (Jin et al. 2025, arXiv 2503.09516); ReTool (Feng et al. 2025, arXiv 2504.11536)"
)
EXPERIMENT = Experiment(
    name="tools",
    lab="60_tools_and_turns",
    arms=ARMS,
    train=train,
    steps=150,
    curves=("reward/mean", "accuracy", "tools/call_rate", "turns/mean"),
    claims=(
        Claim(
            "accuracy",
            "multi-turn RL with the tool's tokens masked raises accuracy",
            SOURCE,
            metric="accuracy gain",
            arm="calculator",
            note="Held-out calculator accuracy after RL minus the cold start's, same episodes.",
        ),
        Claim(
            "when",
            "RL teaches when to call the tool: the call rate comes to track difficulty",
            SOURCE,
            metric="call spread gain",
            arm="calculator",
            note="Call spread: tool-call rate on hard (37*48=) minus easy (3+4=) prompts, "
            "held-out; its change from the cold start.",
        ),
        Claim(
            "turns",
            "a reward that falls with each turn shortens episodes",
            "labkit's guessing game (GuessNumber.get_reward: no paper)",
            metric="turns gain",
            arm="guess",
            direction=-1,
            note="Held-out guesses per episode after RL minus the cold start's.",
        ),
        Claim(
            "env-mask",
            "environment tokens get no gradient and no KL (their loss weight is 0)",
            "TRL 1.16 GRPOTrainer tool_mask; Search-R1 (arXiv 2503.09516), retrieved token masking",
            metric="env-token weight (max)",
            arm="calculator",
            direction=0,
            margin=1e-6,
            note="Largest loss weight of an environment-written token in the run's per-token "
            "log. TRL's masked loss equals labkit's: tests/test_trl_env.py.",
        ),
    ),
    live={"arms": ["calculator"], "seeds": (0, 1, 2, 3), "steps": 150},
)
