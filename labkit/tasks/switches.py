"""Thinking-mode switches and a thinking budget on the graded task (Qwen3's Thinking Mode Fusion).

Qwen3 Technical Report (Qwen Team 2025, arXiv 2505.09388, sec. 4.3): one model answers in a
thinking and a non-thinking mode, chosen by a flag at the end of the user's turn, ``/think`` or
``/no_think``; a non-thinking response keeps an empty thinking block
(``<think></think>``) so the format is the same in both modes, and without a flag the model
follows its default. Its thinking budget: once the thought reaches the budget, the thought is
stopped (Qwen3 inserts a stop-thinking instruction and closes the block) and the model answers
from the partial thought; "this ability is not explicitly trained, but emerges naturally from
thinking mode fusion".

Here a prompt is graded's (``"12+07+93="``) with the switch appended (``"12+07+93= /think"``):
the character-level policy reads it just before it writes. A thought's steps are graded's
running sums, space-separated, so the budget counts steps (Qwen3 counts tokens); the cut closes
the thought with ``</think>`` alone (a tiny policy reads no instruction).

>>> p = with_switch("3+5=", "no_think"); p, switch_of(p), strip_switch(p)
('3+5= /no_think', 'no_think', '3+5=')
>>> fused_target([3, 5], 1, "no_think"), fused_target([3, 5], 1, "think")
('<think></think><answer>8</answer>', '<think>3+5=8</think><answer>8</answer>')
"""

from __future__ import annotations

from labkit.tasks.graded import graded_trace

SWITCHES = {"think": " /think", "no_think": " /no_think", "none": ""}
"""Switch -> the text appended to a prompt (``none``: the policy's default)."""
EMPTY_THOUGHT = "<think></think>"
"""A non-thinking response's thought (Qwen3 sec. 4.3: the block kept, empty)."""


def with_switch(prompt: str, switch: str) -> str:
    """``prompt`` with ``switch`` (a key of ``SWITCHES``) appended."""
    if switch not in SWITCHES:
        raise ValueError(f"switch={switch!r}: use one of {list(SWITCHES)}")
    return prompt + SWITCHES[switch]


def switch_of(prompt: str) -> str:
    """The switch a prompt ends with (``"none"`` without one).

    >>> switch_of("3+5= /think"), switch_of("3+5=")
    ('think', 'none')
    """
    for name, text in SWITCHES.items():
        if text and prompt.endswith(text):
            return name
    return "none"


def strip_switch(prompt: str) -> str:
    """The prompt without its switch (graded's own prompt)."""
    return prompt[: len(prompt) - len(SWITCHES[switch_of(prompt)])]


def fused_target(operands: list[int], digits: int, mode: str, rechecks=()) -> str:
    """A cold-start target: ``mode`` ``"think"``, graded's thought then the answer;
    ``"no_think"``, the empty thought then the answer."""
    if mode not in ("think", "no_think"):
        raise ValueError(f"mode={mode!r}: use 'think' or 'no_think'")
    thought = graded_trace(operands, digits, rechecks) if mode == "think" else ""
    return f"<think>{thought}</think><answer>{sum(operands)}</answer>"


def thought_steps(completion: str) -> list[str] | None:
    """The steps (space-separated) of a completion's thought, closed or not (a thought cut by
    the length limit has no ``</think>``); None without ``<think>`` at the start.

    >>> thought_steps("<think>3+5=8 8+8=16</think><answer>16</answer>"), thought_steps("<think>3+")
    (['3+5=8', '8+8=16'], ['3+'])
    >>> thought_steps("<think></think><answer>8</answer>"), thought_steps("<answer>8</answer>")
    ([], None)
    """
    if not completion.startswith("<think>"):
        return None
    body = completion[len("<think>") :]
    stop = body.find("</think>")
    body = body if stop < 0 else body[:stop]
    return body.split()


def cut_thought(completion: str, budget: int) -> str | None:
    """Qwen3's thinking budget in steps: when the thought goes past ``budget`` steps (or is
    not closed), the prefix to answer from: the thought's first ``budget`` steps, closed; None
    when the completion keeps its own ending (a thought closed within the budget, or no
    thought).

    >>> c = "<think>3+5=8 8+8=16</think><answer>16</answer>"
    >>> cut_thought(c, 1), cut_thought(c, 0), cut_thought(c, 2)
    ('<think>3+5=8</think>', '<think></think>', None)
    >>> cut_thought("<think>3+5=8 8+8=1", 5), cut_thought("<answer>8</answer>", 0)
    ('<think>3+5=8 8+8=1</think>', None)
    """
    steps = thought_steps(completion)
    if budget < 0:
        raise ValueError(f"budget={budget}: a number of thought steps >= 0")
    if steps is None or ("</think>" in completion and len(steps) <= budget):
        return None
    return "<think>" + " ".join(steps[:budget]) + "</think>"
