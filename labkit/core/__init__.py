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
from labkit.core.kl import (
    kl_estimate,
    kl_exact,
    kl_k1,
    kl_k2,
    kl_k3,
    kl_k3_is,
    kl_k3_st,
)
from labkit.core.logprobs import (
    entropy_bonus,
    entropy_from_logits,
    masked_mean,
    masked_sum,
    token_logprobs,
)
from labkit.core.losses import value_loss
from labkit.core.off_policy import off_policy_sequence_mask
from labkit.core.policy import policy_loss, token_weights
from labkit.core.preference import bradley_terry_loss, dpo_loss
from labkit.core.surrogate import clipped_surrogate, importance_ratio, kl_penalty
from labkit.core.tis import truncated_is_weight

__all__ = [
    "bradley_terry_loss",
    "clipped_surrogate",
    "discounted_returns",
    "dpo_loss",
    "entropy_bonus",
    "entropy_from_logits",
    "gae",
    "group_advantages",
    "importance_ratio",
    "kl_estimate",
    "kl_exact",
    "kl_k1",
    "kl_k2",
    "kl_k3",
    "kl_k3_is",
    "kl_k3_st",
    "kl_penalty",
    "masked_mean",
    "masked_sum",
    "off_policy_sequence_mask",
    "policy_loss",
    "reinforce_advantages",
    "rloo_advantages",
    "token_logprobs",
    "token_weights",
    "truncated_is_weight",
    "value_loss",
    "whiten",
]
