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
from labkit.core.first_order import (
    gradient_agreement,
    sequence_ratio,
    sequence_surrogate,
    token_surrogate,
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
from labkit.core.kl_control import adaptive_kl_beta, proportional_kl_beta
from labkit.core.lagrange import constraint_cost, dual_update, lagrangian_reward
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
from labkit.core.trust_region import (
    conjugate_gradient,
    fisher_vector_product,
    flat_grad,
    line_search,
    natural_step,
)

__all__ = [
    "adaptive_kl_beta",
    "bradley_terry_loss",
    "clipped_surrogate",
    "conjugate_gradient",
    "constraint_cost",
    "discounted_returns",
    "dpo_loss",
    "dual_update",
    "entropy_bonus",
    "entropy_from_logits",
    "fisher_vector_product",
    "flat_grad",
    "gae",
    "gradient_agreement",
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
    "lagrangian_reward",
    "line_search",
    "masked_mean",
    "masked_sum",
    "natural_step",
    "off_policy_sequence_mask",
    "policy_loss",
    "proportional_kl_beta",
    "reinforce_advantages",
    "rloo_advantages",
    "sequence_ratio",
    "sequence_surrogate",
    "token_logprobs",
    "token_surrogate",
    "token_weights",
    "truncated_is_weight",
    "value_loss",
    "whiten",
]
