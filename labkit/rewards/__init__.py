"""Rewards: functions in TRL's signature ``fn(completions, **columns) -> list[float | None]``
(``builtin``), the checked call every trainer makes (``call``), and a learned-similarity reward
(``similarity``, optional: it needs ``labkit[real]``).
"""

from labkit.rewards.builtin import REWARDS, digit_partial, exact_match, length_target
from labkit.rewards.call import RewardError, RewardFn, call_reward, get_reward, reward_name

__all__ = [
    "REWARDS",
    "RewardError",
    "RewardFn",
    "call_reward",
    "digit_partial",
    "exact_match",
    "get_reward",
    "length_target",
    "reward_name",
]
