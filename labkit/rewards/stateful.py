"""A reward function with state that learns while a run trains (a Lagrange multiplier), kept in
the run's checkpoints so a resumed run goes on from the state it had.

A :class:`StatefulReward` is called as any reward (``fn(completions, **kwargs)``, TRL's
signature) and has ``state_dict()`` / ``load_state_dict(state)``, as a ``Task`` and a torch
module do; the trainer's reward scorer saves and restores them by the reward's name
(:meth:`labkit.algos.scoring.RewardScorer.state_dict`). It must run in the trainer's process:
in a reward worker process (``reward_runtime="process"``) its state would change in the
worker's copy while checkpoints saved the trainer's, so such a call is refused. Under
``"auto"`` (the default) it runs inline (``labkit_inline``).

>>> class Count(StatefulReward):
...     def __init__(self):
...         super().__init__("count"); self.calls = 0
...     def score(self, completions, **kwargs):
...         self.calls += 1; return [float(self.calls)] * len(completions)
...     def state_dict(self):
...         return {"calls": self.calls}
...     def load_state_dict(self, state):
...         self.calls = state["calls"]
>>> f = Count(); f(["a", "b"]), f(["a"]), f.state_dict()
([1.0, 1.0], [2.0], {'calls': 2})
"""

from __future__ import annotations

import os


class StatefulReward:
    """The base of rewards with state: subclasses write :meth:`score`, :meth:`state_dict`
    and :meth:`load_state_dict`; ``name`` names the reward's columns and its saved state."""

    labkit_inline = True
    """Run in the trainer's thread under ``reward_runtime="auto"`` (module docstring)."""

    def __init__(self, name: str):
        self.__name__ = name
        self._pid = os.getpid()  # the process whose state checkpoints save

    def __call__(self, completions: list, **kwargs) -> list[float]:
        if os.getpid() != self._pid:
            raise RuntimeError(
                f"{self.__name__} keeps state across steps and was called in a reward worker "
                "process, where its changes would be lost to checkpoints: use "
                "reward_runtime='auto' (the default) or 'inline'"
            )
        return self.score(completions, **kwargs)

    def score(self, completions: list, **kwargs) -> list[float]:
        """One reward per completion (TRL's signature); may update the state."""
        raise NotImplementedError

    def state_dict(self) -> dict:
        """What a checkpoint keeps of the reward (plain Python values or tensors)."""
        return {}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` (a checkpoint's)."""
