"""A guessing game over several turns: find a secret number in 1..N from higher/lower hints.

The prompt is ``"guess:"``; the secret is the example's ``answer`` column (``reset`` reads it).
Each policy turn guesses with the tool, ``"[8="``; the environment answers ``"<]"`` (the secret
is lower), ``">]"`` (higher) or ``"!]"`` (found); the policy then stops (end-of-sequence).
The environment owns the reward (``get_reward``, as TRL's ``environment_factory`` allows):
1 - (guesses - 1) / MAX_GUESSES when found, 0 otherwise. Fewer turns, more reward: binary
search needs at most log2(N) + 1 guesses; a random guess inside the interval the hints leave
(the cold start) about twice as many.
"""

from __future__ import annotations

import random

from labkit.envs.base import BracketProtocol
from labkit.tasks.base import Example, Task

MAX_GUESSES = 6
"""Guesses rewarded; the lab's turn limit (``max_turns``) is MAX_GUESSES + 1."""


class GuessNumber:
    """The environment: one tool, ``guess``; the reward is read from its state."""

    def __init__(self):
        self.reset()

    def reset(self, answer: str = "1", **columns) -> str | None:
        """Start an episode with the secret ``answer``; no observation."""
        self.secret, self.guesses, self.found = int(answer), 0, False
        return None

    def guess(self, number: str) -> str:
        """Guess the secret: "<" when it is lower, ">" when higher, "!" when found.

        Args:
            number: the guess, an integer.
        """
        self.guesses += 1
        g = int(number)  # a guess that is not an integer raises: a tool failure
        if g == self.secret:
            self.found = True
            return "!"
        return "<" if self.secret < g else ">"

    def get_reward(self) -> float:
        """1 - (guesses - 1) / MAX_GUESSES when found (0 when not found or past the limit)."""
        if not self.found:
            return 0.0
        return max(0.0, 1.0 - (self.guesses - 1) / MAX_GUESSES)


class GuessTask(Task):
    """Secrets 1..N, every one in both splits (the prompt is the same; only the secret varies).

    >>> t = GuessTask(16); len(t.train), t.train[0].prompt, t.verify("[8=!]", "8")
    (16, 'guess:', True)
    """

    name = "guess"
    protocol = BracketProtocol()

    def __init__(self, N: int = 16):
        self.N = N
        self.train = [Example("guess:", str(s)) for s in range(1, N + 1)]
        self.heldout = list(self.train)

    def verify(self, completion: str, answer: str) -> bool:
        return "!]" in completion

    @property
    def max_answer_chars(self) -> int:
        return 6 * (MAX_GUESSES + 1)


def guess_traces(N: int, n: int, seed: int) -> list[tuple[str, str]]:
    """Cold-start (prompt, target) pairs: each guess uniform in the interval the hints so far
    leave, until found (episodes over MAX_GUESSES + 1 guesses are dropped).

    >>> guess_traces(16, 1, 0)[0][1].endswith("!]")
    True
    """
    rng = random.Random(seed)
    pairs = []
    while len(pairs) < n:
        secret, lo, hi, text = rng.randint(1, N), 1, N, ""
        while True:
            g = rng.randint(lo, hi)
            hint = "!" if g == secret else ("<" if secret < g else ">")
            text += f"[{g}={hint}]"
            if hint == "!":
                break
            lo, hi = (lo, g - 1) if hint == "<" else (g + 1, hi)
        if text.count("[") <= MAX_GUESSES + 1:
            pairs.append(("guess:", text))
    return pairs
