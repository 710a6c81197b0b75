"""Run a user's reward code safely: compile it, call it with a time limit, check what it returns.

Every failure becomes one :class:`labkit.rewards.RewardError` with a readable message: a syntax
error (with its line), no function defined, an exception, a wrong count, NaN/inf, a non-number,
or a hang past the time limit. The call runs in a forked worker process (the reward runtime,
``labkit.rewards.runtime``), killed at the time limit, so a call blocked inside C (``time.sleep``,
a regex backtracking) ends too. No ipywidgets here: the editor widget and the tests share this.
"""

from __future__ import annotations

import math
import re
import traceback
from dataclasses import dataclass, field

import torch

from labkit.core.advantages import group_advantages
from labkit.rewards import RewardError
from labkit.rewards.runtime import RewardRunner

SOURCE = "<reward editor>"
"""The file name the editor's code is compiled under: its frames in a traceback carry it."""


def compile_reward(code: str, name: str | None = None):
    """The reward function defined by ``code`` (the last top-level ``def``, or ``name``).

    >>> fn = compile_reward("def ones(completions, **kw):\\n    return [1.0] * len(completions)")
    >>> fn.__name__, fn(["a", "b"])
    ('ones', [1.0, 1.0])
    >>> compile_reward("def f(completions:\\n  pass")
    Traceback (most recent call last):
    ...
    labkit.rewards.call.RewardError: syntax error on line 1: '(' was never closed: def f(completions:
    """
    try:
        tree = compile(code, SOURCE, "exec")
    except SyntaxError as e:
        text = (e.text or "").strip()
        err = RewardError(f"syntax error on line {e.lineno}: {e.msg}: {text}")
        err.lineno = e.lineno
        raise err from None
    namespace: dict = {}
    try:
        exec(tree, namespace)  # noqa: S102 - the user's own code, in the user's own kernel
    except Exception as e:  # noqa: BLE001 - any error in user code becomes one message
        err = RewardError(f"the code raised {type(e).__name__} while defining the function: {e}")
        err.lineno = error_line(e)
        raise err from None
    fns = [
        v
        for v in namespace.values()
        if callable(v) and getattr(getattr(v, "__code__", None), "co_filename", "") == SOURCE
    ]
    if name is not None:
        fns = [f for f in fns if f.__name__ == name]
    if not fns:
        raise RewardError(
            "no function defined: write def my_reward(completions, **kwargs): "
            "return [one float per completion]"
        )
    return fns[-1]


def error_line(e: BaseException) -> int | None:
    """The line of the editor's code that ``e`` points at: a syntax error's line, else the
    innermost frame of that code in the traceback, also one that came back from a worker
    process as text (pebble's ``RemoteTraceback``); None when the code is not in it (a wrong
    count, a hang).

    >>> try:
    ...     compile_reward("def f(completions, **kw):\\n    return [1 +]")
    ... except RewardError as e:
    ...     error_line(e)
    2
    """
    line = getattr(e, "lineno", None)
    if line:
        return int(line)
    text = "".join(traceback.format_exception(e))
    hits = re.findall(rf'File "{re.escape(SOURCE)}", line (\d+)', text)
    return int(hits[-1]) if hits else None


def safe_call(
    fn,
    completions: list[str],
    columns: dict,
    timeout: float = 2.0,
    runner: RewardRunner | None = None,
) -> list[float]:
    """``call_reward(fn, completions, columns)`` in a forked worker process, at most ``timeout``
    s (``labkit.rewards.runtime``): past it the worker is killed, so a loop stuck in C ends too.
    Pass a ``runner`` to keep ``fn``'s worker (and any state the function keeps) across calls.

    >>> safe_call(lambda completions, **kw: [0.5] * len(completions), ["a"], {})
    [0.5]
    """
    own = runner is None
    runner = RewardRunner(timeout=timeout, mode="process") if own else runner
    try:
        return runner(fn, completions, columns).values
    finally:
        if own:
            runner.close()


@dataclass
class Bank:
    """Cached completions to try a reward on: texts, dataset columns, and group ids;
    ``rewards``: the total reward the run gave each one (None for completions from elsewhere)."""

    completions: list[str]
    columns: dict = field(default_factory=dict)
    group: list = field(default_factory=list)
    scale_rewards: str = "group"
    rewards: list[float] | None = None

    def __post_init__(self):
        if not self.completions:
            raise ValueError("the bank is empty: train a step first or pass completions")
        if not self.group:
            self.group = [0] * len(self.completions)

    @property
    def G(self) -> int:
        return max(self.group.count(g) for g in set(self.group))


def bank_from_samples(samples, max_samples: int = 512, scale_rewards: str = "group") -> Bank:
    """The latest completions of a run (``run.samples``): its last steps, whole groups only."""
    if not len(samples):
        raise ValueError("the run has no samples yet: train at least one step first")
    steps = sorted(samples["step"].unique())
    picked, n = [], 0
    for st in reversed(steps):
        part = samples[samples["step"] == st]
        if n and n + len(part) > max_samples:
            break
        picked.append(part)
        n += len(part)
    import pandas as pd

    s = pd.concat(picked[::-1])
    cols = {"prompts": s["prompt"].tolist()}
    if "answer" in s:
        cols["answer"] = s["answer"].astype(str).tolist()
    scored = s["reward"].astype(float).tolist() if "reward" in s else None
    return Bank(
        s["completion"].tolist(),
        cols,
        list(zip(s["step"], s["group"])),
        scale_rewards,
        rewards=scored,
    )


def evaluate_reward(
    fn, bank: Bank, timeout: float = 2.0, runner: RewardRunner | None = None
) -> dict:
    """Rewards of ``fn`` on the bank (checked, time-limited), and :func:`score_bank` of them."""
    return score_bank(bank, safe_call(fn, bank.completions, bank.columns, timeout, runner))


def score_bank(bank: Bank, values: list[float]) -> dict:
    """The advantages ``values`` (one reward per completion of the bank) would give and the
    fraction of groups with zero spread (no signal). None and NaN count as 0 in the total, as
    in the trainer's weighted sum.

    >>> res = score_bank(Bank(["a", "b", "c", "d"], group=[0, 0, 1, 1]), [1.0, 0.0, 1.0, 1.0])
    >>> [round(a, 3) for a in res["advantages"]], res["frac_zero_spread"]
    ([0.707, -0.707, 0.0, 0.0], 0.5)
    """
    r = torch.tensor([0.0 if v is None or math.isnan(v) else v for v in values])  # [B]
    keys = list(dict.fromkeys(bank.group))
    order = sorted(range(len(r)), key=lambda i: keys.index(bank.group[i]))
    sizes = {g: bank.group.count(g) for g in keys}
    G = bank.G
    if len(set(sizes.values())) == 1 and len(r) % G == 0:
        adv = torch.empty_like(r)
        adv[order] = group_advantages(r[order], G, bank.scale_rewards)  # [B]
        zero = (r[order].view(-1, G).std(1) == 0).float().mean().item()
    else:  # ragged groups: no group advantage
        adv, zero = torch.zeros_like(r), math.nan
    return {
        "rewards": r.tolist(),
        "raw": values,
        "advantages": adv.tolist(),
        "frac_zero_spread": zero,
        "groups": len(keys),
    }
