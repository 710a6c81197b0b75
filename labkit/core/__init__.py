"""The math of the lab as pure torch functions: no transformers, no widgets.

Every trainer, plot and notebook takes its estimators, advantages and losses from here.
"""

from labkit.core.logprobs import entropy_from_logits, masked_mean, masked_sum, token_logprobs

__all__ = ["entropy_from_logits", "masked_mean", "masked_sum", "token_logprobs"]
