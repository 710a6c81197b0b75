"""What a run leaves behind: the run log (``log``), what a step records (``records``),
checkpoints for resume and fork (``checkpoint``), comparing runs (``compare``) and held-out
evaluation, pass@k and maj@k (``evaluate``). Nothing here imports an algorithm.
"""
