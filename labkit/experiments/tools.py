"""Lab 60: tools and turns. RL on multi-turn episodes with the environment's tokens masked.

CLAIM: with the environment's tokens masked out of the loss (TRL's ``env_mask``), GRPO on
whole episodes (a) raises the calculator policy's accuracy and teaches it *when* to call the
tool (the call rate tracks the prompt's difficulty), and (b) makes the guessing game's episodes
shorter (fewer turns per episode).

:func:`probe` measures a policy on held-out episodes (per level: accuracy, tool-call rate);
:func:`run` trains from the ``tiny-tools`` cold start on both environments and returns the
table; :func:`verdict` reads the directions from it.
"""

from __future__ import annotations

import pandas as pd
import torch

from labkit.algos.multiturn import MultiTurnGRPOTrainer
from labkit.envs import ENVS, tool_reward
from labkit.envs.calculator import LEVELS, level
from labkit.envs.guess import MAX_GUESSES
from labkit.models.episode import episodes

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


def probe(
    model, tokenizer, env: str = "calculator", n: int = 192, seed: int = 0, temperature: float = 1.0
) -> dict:
    """Held-out episodes sampled at ``temperature``: for the calculator, accuracy and tool-call
    rate per level (``acc/easy``, ``calls/hard``, ...); for the guessing game, found rate
    (``accuracy``), ``turns`` (guesses per episode) and mean reward. Every example of the held-out split, cycled to ``n``."""
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


def trainer(env: str, seed: int = 0, **overrides) -> MultiTurnGRPOTrainer:
    """The lab's trainer on ``env`` from the ``tiny-tools`` cold start."""
    env_cls, task_cls = ENVS[env]
    rewards = (tool_reward,) if env == "calculator" else ()
    kw = {
        "num_generations": 8,
        "prompts_per_step": 8,
        "learning_rate": 3e-4,
        "beta": 0.0,
        "max_completion_length": MAX_LEN[env],
        "max_turns": MAX_TURNS[env],
        "seed": seed,
        "diagnostics": 16,
    }
    return MultiTurnGRPOTrainer(
        "tiny-tools",
        env=env_cls,
        reward_funcs=rewards,
        task=task_cls(),
        track_kl=False,
        **{**kw, **overrides},
    )


STEPS = {"calculator": 150, "guess": 150}
"""Full-mode GRPO steps per environment (a guessing-game step runs up to 7 policy turns)."""


def run(
    fast: bool = False,
    seed: int = 0,
    steps: int | None = None,
    n: int | None = None,
    progress: bool = True,
) -> dict:
    """Probe, train, probe again, for each environment: the calculator (``tool_reward``: answer
    right minus 0.3 per call) and the guessing game (``GuessNumber.get_reward``).

    Full: ``STEPS`` (150 each), probes of 768 (calculator) and 384 (guess) held-out
    episodes. Fast: 10 steps each, probes of 48. Returns ``{"calculator": {"before",
    "after"}, "guess": {...}, "runs": {env: RunLog}, "config": dict}``.
    """
    out = {"runs": {}, "config": {"seed": seed}}
    for env, size in (("calculator", 768), ("guess", 384)):
        k, s = n or (48 if fast else size), steps or (10 if fast else STEPS[env])
        t = trainer(env, seed=seed, max_steps=s)
        before = probe(t.model, t.tokenizer, env, k, seed + 1)
        out["runs"][env] = t.train(progress=progress)
        out[env] = {"before": before, "after": probe(t.model, t.tokenizer, env, k, seed + 1)}
        out["config"].update({f"{env} steps": s, f"{env} probe": k})
    return out


def table(res: dict) -> pd.DataFrame:
    """One row per (environment, measure): before, after, change."""

    rows = [
        {
            "env": env,
            "measure": key,
            "before": res[env]["before"][key],
            "after": res[env]["after"][key],
        }
        for env in ("calculator", "guess")
        for key in res[env]["before"]
    ]
    df = pd.DataFrame(rows)
    df["change"] = df["after"] - df["before"]
    return df


def level_table(res: dict) -> pd.DataFrame:
    """Calculator: call rate and accuracy per (phase, level), for the bar figure."""

    c = res["calculator"]
    return pd.DataFrame(
        [
            {
                "phase": ph,
                "level": lv,
                "call_rate": c[ph][f"calls/{lv}"],
                "accuracy": c[ph][f"acc/{lv}"],
            }
            for ph in ("before", "after")
            for lv in LEVELS
        ]
    ).set_index(["phase", "level"])


def verdict(res: dict) -> str:
    """Three directions read from the probes: calculator accuracy up; the call rate tracks
    difficulty (after RL: hard > easy by more than before, and medium between or equal);
    guessing-game turns per episode down."""
    b, a = res["calculator"]["before"], res["calculator"]["after"]
    gb, ga = res["guess"]["before"], res["guess"]["after"]
    spread = [x["calls/hard"] - x["calls/easy"] for x in (b, a)]
    acc_up = a["accuracy"] > b["accuracy"]
    tracks = spread[1] > max(spread[0], 0) and a["calls/hard"] >= a["calls/medium"] - 0.05
    fewer = ga["turns"] < gb["turns"]
    calls = ", ".join(f"{lv} {b[f'calls/{lv}']:.2f} -> {a[f'calls/{lv}']:.2f}" for lv in LEVELS)
    lines = [
        (
            f"calculator accuracy {b['accuracy']:.3f} -> {a['accuracy']:.3f}; tool-call rate"
            f" by level: {calls} (hard - easy {spread[0]:+.2f} -> {spread[1]:+.2f})."
        ),
        (
            f"guessing game: turns per episode {gb['turns']:.2f} -> {ga['turns']:.2f}, found "
            f"{gb['accuracy']:.2f} -> {ga['accuracy']:.2f}, reward {gb['reward']:.3f} -> "
            f"{ga['reward']:.3f}."
        ),
    ]
    for ok, what in (
        (acc_up, "calculator accuracy rises"),
        (tracks, "the tool-call rate tracks difficulty"),
        (fewer, "the guessing game's turns per episode fall"),
    ):
        lines.append(("REPRODUCED: " if ok else "NOT REPRODUCED: ") + what + ".")
    return "\n".join(lines)
