"""Offline RFT as a trainer: GRPO's loop with the samples drawn from the frozen SFT model.

DeepSeekMath (Shao et al. 2024, arXiv 2402.03300, sec. 5.2.1 and appendix A.1) writes every
method's gradient as

    grad J = E_{(q, o) ~ D} [ 1/|o| sum_t GC(q, o, t) grad log pi_theta(o_t | q, o_<t) ]   (5)

and the methods differ in the data source D and the gradient coefficient GC:

    RFT          q ~ P_sft(Q), o ~ pi_sft(O | q)     GC = I(o) (1: the answer is right)  (8)-(10)
    Online RFT   q ~ P_sft(Q), o ~ pi_theta(O | q)   GC = I(o)                           (11)
    GRPO         as Online RFT, G outputs per q      GC = the group-normalised A_i       (21)

With r = I(o) in {0, 1}, ``advantage_estimator="reinforce"`` (A = r, no baseline) and mu = 1
(ratio 1, nothing to clip) a :class:`~labkit.algos.grpo.GRPOTrainer` step is Online RFT's
gradient. :class:`OfflineRFTTrainer` keeps that step and changes only D: its completions are
sampled from a frozen copy of the policy it started from (pi_sft), so the data never depend on
theta. Sampling them step by step from the frozen copy is drawing the whole data set once up
front and reading it in order (the same prompts, the same number of samples a step as the
online methods); it keeps the run log's per-step samples, curves and checkpoints.

Departure: RFT as Yuan et al. (2023, arXiv 2308.01825) run it fine-tunes on the kept samples
(deduplicated, several epochs, a token mean over the kept ones); here each drawn sample is used
once, wrong ones with GC = 0, and the loss is a mean over every drawn sample (eq. 8 as written):
the scale differs from a mean over the kept ones by the kept fraction, which AdamW largely
absorbs.
"""

from __future__ import annotations

import torch

from labkit.algos.grpo import GRPOTrainer
from labkit.models.policy import frozen_copy


class OfflineRFTTrainer(GRPOTrainer):
    """``OfflineRFTTrainer("tiny-graded", reward_funcs=["answer_match"], task="graded")``: the
    step of Online RFT (A = r, mu = 1) on completions of the frozen starting policy pi_sft.

    >>> OfflineRFTTrainer.algorithm, OfflineRFTTrainer.config_class.__name__
    ('offline-rft', 'GRPOConfig')
    """

    algorithm = "offline-rft"

    def __init__(self, *args, **overrides):
        overrides.setdefault("advantage_estimator", "reinforce")  # GC = I(o) when r = I(o)
        super().__init__(*args, **overrides)

    def setup(self) -> None:
        super().setup()
        c = self.config
        if c.num_iterations != 1:
            raise ValueError(
                f"num_iterations={c.num_iterations}: offline RFT has no importance ratio "
                "(pi_theta / pi_sft is not a trust region); use num_iterations=1"
            )
        if c.advantage_estimator != "reinforce":
            raise ValueError(
                f"advantage_estimator={c.advantage_estimator!r}: RFT's coefficient is I(o), "
                'use advantage_estimator="reinforce" with a 0/1 reward'
            )
        # taken before a resumed run loads its checkpoint: always the policy the run started from
        self.sft_model = frozen_copy(self.model)

    @property
    def sampler(self) -> torch.nn.Module:
        """pi_sft: the frozen starting policy, whatever pi_theta has become."""
        return self.sft_model
