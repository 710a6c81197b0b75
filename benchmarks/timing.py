"""What every benchmark here shares: seconds per labkit step, and a TRL callback that clocks
TRL's steps the same way (from on_step_begin to on_step_end)."""

import time


def step_times(step, steps: int) -> list[float]:
    """Seconds of each of ``steps`` calls of ``step()`` (a labkit trainer's ``step``)."""
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return times


def trl_clock():
    """A ``TrainerCallback`` whose ``.times`` collects the seconds of each TRL training step."""
    from transformers import TrainerCallback

    class Clock(TrainerCallback):
        def __init__(self):
            self.times, self.start = [], 0.0

        def on_step_begin(self, args, state, control, **kw):
            self.start = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            self.times.append(time.perf_counter() - self.start)

    return Clock()
