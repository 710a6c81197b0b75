"""The math of the lab as pure torch functions: no transformers, no widgets.

Every trainer, plot and notebook takes its estimators, advantages and losses from here.
"""

from labkit.core.advantages import (
    discounted_returns,
    gae,
    group_advantages,
    reinforce_advantages,
    rloo_advantages,
    whiten,
)
from labkit.core.logprobs import entropy_from_logits, masked_mean, masked_sum, token_logprobs

__all__ = [
    "discounted_returns",
    "entropy_from_logits",
    "gae",
    "group_advantages",
    "masked_mean",
    "masked_sum",
    "reinforce_advantages",
    "rloo_advantages",
    "token_logprobs",
    "whiten",
]
