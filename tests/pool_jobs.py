"""Jobs for the worker-pool tests: importable module-level functions, as a worker needs."""

import os
import pathlib
import time


def sleeper(folder: str, seconds: float, tick) -> None:
    """Write this worker's pid to ``folder``, then sleep: a job that outlives its parent."""
    pathlib.Path(folder, f"{os.getpid()}.pid").write_text("")
    tick(0, 1)
    time.sleep(seconds)
