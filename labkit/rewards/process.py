"""Process rewards for the ``scratchpad`` and ``graded`` tasks: a label per reasoning step, not one
per answer.

A completion ``<think>3+5=8 8+8=16 ...</think><answer>25</answer>`` is cut into process steps:
each scratchpad step (checked against the true running sum by
``labkit.tasks.scratchpad.steps``), then the answer as a last step (label: the answer is right
and the completion well formed). A direct answer has one step, the answer. These are the
labels a process reward model (PRM) is trained on (Lightman et al. 2023, "Let's verify step by
step", arXiv 2305.20050), and the rewards of DeepSeekMath's process supervision (2402.03300,
sec. 4.1.3).

On ``graded`` (``task="graded"``) the thought's steps are read by
:func:`~labkit.tasks.graded.graded_steps`: one place value a step, matched to the chain in order,
a re-check (a true step written again) labelled right, as that parser does. A thought cut off
before ``</think>`` has no steps on either task: only the answer step, which is wrong.

Departure: a step ends at its last character, which is its last token for labkit's
char-level ``tiny`` policies (one token per character); the answer step ends at the eos token.

>>> [(s.end, s.label) for s in process_steps("<think>3+5=8 8+8=17</think><answer>17</answer>",
...                                          "3+5+8=")]
[(11, True), (18, False), (46, False)]
>>> step_correctness(["<think>3+5=8 8+8=17</think><answer>17</answer>", "<answer>16</answer>"],
...                  prompts=["3+5+8="] * 2)
[0.5, None]
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from labkit.tasks.arithmetic import parse_int
from labkit.tasks.graded import graded_steps
from labkit.tasks.scratchpad import Scratchpad, parse, steps

TASKS = ("scratchpad", "graded")
"""The tasks whose thoughts have step labels."""


@dataclass
class ProcessStep:
    """One process step: its text, the token it ends on, and its label."""

    text: str
    end: int  # index of the step's last token in the completion (the answer: the eos token)
    label: bool  # the step is right (the answer step: the final answer is right)


def process_steps(completion: str, prompt: str, task: str = "scratchpad") -> list[ProcessStep]:
    """The thought's steps, then the answer step (ends at the eos, index len(completion)).

    >>> c = "<think>7+30=37 37+5=42 37+5=42</think><answer>42</answer>"
    >>> [(s.text, s.label) for s in process_steps(c, "07+35=", task="graded")]
    [('7+30=37', True), ('37+5=42', True), ('37+5=42', True), ('42', True)]
    """
    ops = Scratchpad.operands(prompt)
    if task == "scratchpad":
        thought = steps(completion, ops)
    elif task == "graded":
        thought = graded_steps(completion, ops, digits_of(prompt))
    else:
        raise ValueError(f"task={task!r}: step labels exist for {TASKS}")
    out = [ProcessStep(s.text, s.end - 1, s.correct) for s in thought]
    p = parse(completion)
    right = p.well_formed and parse_int(p.answer) == sum(ops)
    return out + [ProcessStep(p.answer or "", len(completion), right)]


def digits_of(prompt: str) -> int:
    """The digits of a graded prompt's operands (all written with as many): ``"07+35="`` -> 2."""
    return len(prompt.split("+")[0])


def step_correctness(
    completions: list[str], prompts: list[str], task: str = "scratchpad", **kwargs
) -> list[float | None]:
    """The share of the thought's steps that are right (the answer step not counted); None for
    a completion without a thought. A metric (or a weight-0 reward) of process quality."""
    out = []
    for c, x in zip(completions, prompts):
        thought = process_steps(c, x, task)[:-1]
        out.append(sum(s.label for s in thought) / len(thought) if thought else None)
    return out


def graded_step_correctness(completions: list[str], prompts: list[str], **kwargs):
    """:func:`step_correctness` on ``graded`` (its own name: a reward function's log key).

    >>> graded_step_correctness(["<think>3+5=8 8+8=17</think><answer>17</answer>"], ["3+5+8="])
    [0.5]
    """
    return step_correctness(completions, prompts, task="graded")


def step_tensors(
    completions: list[str], prompts: list[str], T: int, device=None, task: str = "scratchpad"
):
    """(ends [B, K] long, labels [B, K] float, valid [B, K] bool) of every completion's process
    steps on ``task``, K the most steps of any; ends clamped to T - 1 (a truncated
    completion's answer step falls on its last token)."""
    per = [process_steps(c, x, task) for c, x in zip(completions, prompts)]
    K = max(len(s) for s in per)
    ends = torch.zeros(len(per), K, dtype=torch.long)  # [B, K]
    labels = torch.zeros(len(per), K)  # [B, K]
    valid = torch.zeros(len(per), K, dtype=torch.bool)  # [B, K]
    for i, s in enumerate(per):
        ends[i, : len(s)] = torch.tensor([min(p.end, T - 1) for p in s])
        labels[i, : len(s)] = torch.tensor([float(p.label) for p in s])
        valid[i, : len(s)] = True
    return ends.to(device), labels.to(device), valid.to(device)


def answer_mask(completions: list[str], T: int, device=None) -> torch.Tensor:
    """[B, T] bool: the tokens of each completion's answer, from ``<answer>`` through the eos
    (index ``len(completion)``); none for a completion without ``<answer>`` (cut off, or ill
    formed). One token per character, as on the tiny policies.

    >>> answer_mask(["<think>1+2=3</think><answer>3</answer>", "<think>1+"], 42).sum(-1)  # 18 + eos
    tensor([19,  0])
    """
    mask = torch.zeros(len(completions), T, dtype=torch.bool)  # [B, T]
    for i, c in enumerate(completions):
        start = c.find("<answer>")
        if start >= 0:
            mask[i, start : len(c) + 1] = True  # + 1: the eos token
    return mask.to(device)
