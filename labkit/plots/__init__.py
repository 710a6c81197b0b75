"""Pure figure builders: run logs and tensors in, plotly figures out (notebooks, reports, tests).

training     a run's curves over steps (reward, KL, length, clipping, entropy, a zero loss)
run_step     one step of a run: advantages per scheme, one completion token by token, weights
runs         several runs on one figure (``compare_runs``), forks marked where they branch
live         the dashboard's six-panel figure and the pure functions that feed it
report       a run's figures on one static, offline HTML page (``lk.report``)
advantages   the advantages lab: the same rewards under each advantage scheme
aggregation  the loss-aggregation lab: how much each token weighs under each ``loss_type``
kl           the KL-estimator lab: k1/k2/k3 curves and gradients, KL in reward vs in loss
kl_explorer  the KL explorer's numbers and figure: k1/k2/k3 sampled from q against exact KL
classic      the classic labs: value heatmaps with greedy arrows, learning and error curves
clipping, dr_grpo, dapo, entropy_kl, off_policy, passk, pg_variance, r1_zero, language,
kimi_length, prm, search
             the figures of the experiment of the same name (labkit.experiments)
rft          lab 93: the R1 pipeline's stage bars (lab 94, RFT vs GRPO, draws with seeds)
tools        lab 60: who wrote each token of an episode and its weight; call rate per level
"""

from labkit.plots import (  # noqa: F401
    advantages,
    aggregation,
    classic,
    kl,
    kl_explorer,
    live,
    report,
    run_step,
    runs,
    training,
)
