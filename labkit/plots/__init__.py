"""Pure figure builders: run logs and tensors in, plotly figures out (notebooks, reports, tests)."""
