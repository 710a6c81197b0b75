"""Pure figure builders: run logs and tensors in, plotly figures out (notebooks, reports, tests)."""

from labkit.plots import advantages, aggregation, kl, kl_explorer, live, run_step, training  # noqa: F401
from labkit.plots import runs  # noqa: E402,F401
