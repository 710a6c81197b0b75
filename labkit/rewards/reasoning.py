"""The rule-based rewards of DeepSeek-R1 (arXiv 2501.12948, section 2.2.2), in TRL's signature,
for the ``scratchpad`` task's ``[<think>...</think>]<answer>...</answer>`` completions.

- accuracy: is the answer inside ``<answer>`` right? (:func:`answer_match`)
- format: is the thinking inside ``<think>`` tags, before the answer? (:func:`think_format`)
- language consistency (R1 section 2.3.2): the share of the thought written in the target
  language; here the share of steps in the ``digits`` notation (:func:`language_consistency`).

>>> c = ["<think>12+34=46</think><answer>46</answer>", "<answer>46</answer>", "46"]
>>> answer_match(c, answer=["46"] * 3), think_format(c)
([1.0, 1.0, 0.0], [1.0, 0.0, 0.0])
"""

from __future__ import annotations

from labkit.tasks.arithmetic import parse_int
from labkit.tasks.scratchpad import notation_of, parse


def answer_match(completions: list[str], answer: list[str], **kwargs) -> list[float | None]:
    """1.0 when the completion is well formed and its ``<answer>`` holds the reference integer.

    >>> answer_match(["<answer> 7 </answer>", "<answer>8</answer>", "7"], answer=["7"] * 3)
    [1.0, 0.0, 0.0]
    """
    out = []
    for c, a in zip(completions, answer):
        gold = parse_int(str(a))
        p = parse(c)
        out.append(None if gold is None else float(p.well_formed and parse_int(p.answer) == gold))
    return out


def think_format(completions: list[str], **kwargs) -> list[float]:
    """R1's format reward: 1.0 for ``<think>thought</think><answer>answer</answer>`` with a
    non-empty thought, else 0.0 (a direct answer gets 0: the format asks to think).

    >>> think_format(["<think></think><answer>1</answer>", "<think>x</think><answer>1</answer>"])
    [0.0, 1.0]
    """
    out = []
    for c in completions:
        p = parse(c)
        out.append(float(p.well_formed and bool(p.think)))
    return out


def language_consistency(
    completions: list[str], target: str = "digits", **kwargs
) -> list[float | None]:
    """R1's language-consistency reward: the fraction of the thought's steps written in the
    ``target`` notation; None (not applicable) for a completion without a thought.

    >>> language_consistency(["<think>12+34=46 eg+fg=bac</think><answer>102</answer>",
    ...                       "<think>12+34=46</think><answer>46</answer>", "<answer>4</answer>"])
    [0.5, 1.0, None]
    """
    out = []
    for c in completions:
        p = parse(c)
        words = p.think.split() if p.think else []
        out.append(sum(notation_of(w) == target for w in words) / len(words) if words else None)
    return out


def kimi_length(
    completions: list[str], answer: list[str], prompts: list[str] | None = None, **kwargs
) -> list[float]:
    """Kimi k1.5's length reward (arXiv 2501.12599, sec. 2.3.3), within each group of
    completions sharing a prompt in this call:
        lambda_i = 0.5 - (len_i - min_len) / (max_len - min_len)
        reward_i = lambda_i if correct_i else min(0, lambda_i)
    (len: characters); a group whose lengths are all equal gets 0. Without ``prompts`` the
    whole call is one group.

    >>> c = ["<answer>7</answer>", "<think>3+4=7</think><answer>7</answer>", "<answer>8</answer>"]
    >>> kimi_length(c, answer=["7"] * 3, prompts=["3+4="] * 3)
    [0.5, -0.5, 0.0]
    >>> kimi_length(c[:1] * 2, answer=["7"] * 2)
    [0.0, 0.0]
    """
    prompts = [""] * len(completions) if prompts is None else list(prompts)
    ok = answer_match(completions, answer)
    groups: dict[str, list[int]] = {}
    for i, p in enumerate(prompts):
        groups.setdefault(p, []).append(i)
    out = [0.0] * len(completions)
    for idx in groups.values():
        lens = [len(completions[i]) for i in idx]
        lo, hi = min(lens), max(lens)
        if hi == lo:
            continue
        for i, n in zip(idx, lens):
            lam = 0.5 - (n - lo) / (hi - lo)
            out[i] = lam if ok[i] else min(0.0, lam)
    return out


REASONING_REWARDS = {
    "answer_match": answer_match,
    "think_format": think_format,
    "language_consistency": language_consistency,
    "kimi_length": kimi_length,
}
