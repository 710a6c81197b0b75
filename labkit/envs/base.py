"""The environment interface (TRL's ``environment_factory`` shape) and the text protocol of the
toy environments.

An environment is a plain class, as TRL 1.16's ``GRPOTrainer(environment_factory=...)`` takes it:

- ``reset(**columns) -> str | None``: start an episode from a dataset row (TRL passes the row's
  columns); a string is an observation appended after the prompt;
- tool methods: every public method other than ``reset`` and ``get_reward``, type-hinted, with a
  docstring (TRL builds the tool schema from them);
- ``get_reward() -> float`` (optional): the environment owns the episode's reward.

The tiny policy is character-level and has no chat template, so labkit's toy environments speak
a compact text protocol (:class:`BracketProtocol`): the policy writes ``[`` + arguments + ``=``
(``[37*48=``), the environment answers with the tool's result and ``]`` (``1776]``), and the
policy goes on: it answers, or stops at once to submit the tool's answer; an end-of-sequence
token ends the episode. One protocol object maps text to a
tool call and a result to text, so the same environment class runs in TRL, where the chat
template's tool-call format does that job.

A tool that raises, hangs (past ``timeout`` seconds) or returns something that is not a short
string or number is a *failure*: the policy reads ``error]`` and the episode goes on, as TRL
counts ``tool_failure_count`` and sends ``{"error": ...}`` back to the model.
"""

from __future__ import annotations

import concurrent.futures as cf
import inspect
from dataclasses import dataclass

RESERVED = ("reset", "get_reward")


def env_tools(env) -> dict:
    """The tool methods of ``env`` by name, as TRL finds them: public functions of its class
    other than ``reset`` and ``get_reward``.

    >>> class E:
    ...     def reset(self, **kw): return None
    ...     def calc(self, expression: str) -> str:
    ...         "Evaluate."
    ...         return "1"
    ...     def _private(self): pass
    >>> list(env_tools(E()))
    ['calc']
    """
    return {
        name: getattr(env, name)
        for name, _ in inspect.getmembers(type(env), inspect.isfunction)
        if name not in RESERVED and not name.startswith("_")
    }


@dataclass
class ToolResult:
    """What one tool call gave back: the text the policy reads and, on a fault, its kind."""

    tool: str
    args: str
    text: str
    failure: str | None = None  # "raised: ...", "timeout", "junk: ...", "unknown tool", "parse"


_POOL = cf.ThreadPoolExecutor(max_workers=4, thread_name_prefix="labkit-tool")


def call_tool(fn, args: tuple, timeout: float, max_chars: int = 8) -> tuple[str, str | None]:
    """``(text, failure)`` of ``fn(*args)`` run with a time limit of ``timeout`` seconds.

    A tool's result must be a str, int or float of at most ``max_chars`` characters; anything
    else is junk. Departure from the reward runtime (``labkit.rewards.runtime``), which kills a
    worker process: a tool is a method of a stateful environment, and a forked process would
    lose its state changes, so the call runs in a thread; a thread that hangs is abandoned (it
    finishes in the background), the episode reads ``error`` at once.

    >>> call_tool(lambda x: str(6 * 7), ("",), 1.0)
    ('42', None)
    >>> call_tool(lambda x: 1 / 0, ("",), 1.0)[1]
    'raised: ZeroDivisionError: division by zero'
    """
    future = _POOL.submit(fn, *args)
    try:
        out = future.result(timeout=timeout)
    except cf.TimeoutError:
        return "error", "timeout"
    except Exception as e:  # noqa: BLE001 - any fault of the tool is the episode's, not the run's
        return "error", f"raised: {type(e).__name__}: {e}"
    if isinstance(out, bool) or not isinstance(out, (str, int, float)):
        return "error", f"junk: {type(out).__name__}"
    text = str(out)
    if len(text) > max_chars or not text.isprintable() or "]" in text:
        return "error", f"junk: {text[:20]!r}"
    return text, None


class BracketProtocol:
    """The toy environments' text protocol: ``[args=`` calls the tool, the environment appends
    ``result]``. With several tools, ``[name args=`` picks one by name.

    >>> p = BracketProtocol()
    >>> p.parse("[37*48=", ["calc"])
    ('calc', '37*48')
    >>> p.parse("12", ["calc"]) is None, p.format("1776")
    (True, '1776]')
    """

    open, call_end, close = "[", "=", "]"

    def parse(self, turn: str, tools: list[str]) -> tuple[str, str] | None:
        """``(tool, args)`` when ``turn`` (the policy's text of this turn) ends in a call; None
        when it does not call (an answer). An unknown tool name gives ``("", args)``."""
        if not turn.endswith(self.call_end) or self.open not in turn:
            return None
        body = turn[turn.rindex(self.open) + 1 : -1]
        name, _, rest = body.partition(" ")
        if rest and name in tools:
            return name, rest
        return (tools[0], body) if len(tools) == 1 else ("", body)

    def format(self, text: str) -> str:
        """The characters the environment appends after a call."""
        return text + self.close

    def answer(self, completion: str) -> str:
        """The episode's final answer: the text after the last tool result, or, when the
        policy stops right after a result, that result (it submits the tool's answer).

        >>> p = BracketProtocol()
        >>> p.answer("[37*48=1776]1775"), p.answer("[37*48=1776]"), p.answer("42")
        ('1775', '1776', '42')
        """
        head, _, tail = completion.rpartition(self.close)
        if tail or not head:
            return tail
        return head.rsplit(self.call_end, 1)[-1]

    def writers(self, episode: str) -> list[int]:
        """1 per character the policy wrote, 0 per character of a tool's answer (from the call
        token to the closing bracket): the env mask of a written-out trace (char tokenizer).

        >>> BracketProtocol().writers("[3+4=7]7")
        [1, 1, 1, 1, 1, 0, 0, 1]
        """
        out, inside = [], False
        for c in episode:
            out.append(0 if inside else 1)
            if c == self.call_end and self.open in episode[: len(out)].rsplit(self.close, 1)[-1]:
                inside = True
            elif c == self.close:
                inside = False
        return out

    def run(self, env, turn: str, timeout: float) -> ToolResult | None:
        """Parse ``turn``, call the tool on ``env``, return what the policy reads (None: the
        turn made no call)."""
        tools = env_tools(env)
        call = self.parse(turn, list(tools))
        if call is None:
            return None
        name, args = call
        if name not in tools:
            return ToolResult(name, args, self.format("error"), "unknown tool")
        text, failure = call_tool(tools[name], (args,), timeout)
        return ToolResult(name, args, self.format(text), failure)
