"""Pure figure builders: run logs and tensors in, plotly figures out (notebooks, reports, tests)."""

from labkit.plots import (  # noqa: F401
    advantages,
    aggregation,
    kl,
    kl_explorer,
    live,
    run_step,
    runs,
    training,
)
