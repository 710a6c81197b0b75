"""The training loop every trainer shares: run steps until done, paused or stopped.

A trainer mixes in :class:`TrainLoop` and provides ``step() -> metrics``, ``global_step``,
``config.max_steps``, ``log`` and ``postfix(metrics) -> dict`` (the progress bar's numbers).
``pause()``, ``resume()`` and ``stop()`` are safe from another thread (the dashboard's).
"""

from __future__ import annotations

import threading
import time

from tqdm.auto import tqdm


class TrainLoop:
    """``train()``, ``pause()``, ``resume()``, ``stop()`` around a trainer's ``step()``."""

    algorithm = "train"

    def init_loop(self) -> None:
        self.lock = threading.Lock()  # held during a step; swaps wait for the step boundary
        self.pause_event, self.stop_event = threading.Event(), threading.Event()

    def postfix(self, m: dict) -> dict:
        return {}

    def train(self, max_steps: int | None = None, progress: bool = True, callback=None):
        """Run until ``max_steps`` more steps (default: up to the config's) or :meth:`stop`;
        returns the RunLog. ``callback(trainer, metrics)`` is called after every step."""
        end = self.config.max_steps if max_steps is None else self.global_step + max_steps
        bar = tqdm(total=max(0, end - self.global_step), desc=self.algorithm.upper(),
                   disable=not progress)
        try:
            while self.global_step < end and not self.stop_event.is_set():
                if self.pause_event.is_set():
                    time.sleep(0.05)
                    continue
                m = self.step()
                bar.update(1)
                bar.set_postfix(self.postfix(m))
                if callback is not None:
                    callback(self, m)
        finally:
            bar.close()
        return self.log

    def pause(self) -> None:
        self.pause_event.set()

    def resume(self) -> None:
        self.pause_event.clear()

    def stop(self) -> None:
        self.stop_event.set()
