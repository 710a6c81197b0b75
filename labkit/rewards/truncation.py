"""Truncation scored 0: a reward that gives nothing to a completion cut off at the token limit.

A completion that reaches ``max_completion_length`` tokens without its end-of-sequence token
never finished; R1-Zero-like training (Liu et al. 2025, arXiv 2503.20783) scores it as an answer
that failed. :class:`TruncatedZero` wraps any reward so: ``fn``'s value where the completion
ended, 0.0 where it was truncated. It keeps the truncated completion in the loss (with
reward 0, so usually A < 0), unlike DAPO's overlong filtering (``mask_truncated_completions``,
which drops it from the loss) or its soft overlong punishment (``overlong_buffer``, which adds a
negative reward near the limit).
"""

from __future__ import annotations

from labkit.rewards.call import RewardFn, get_reward, reward_name


def truncated(ids: list[int], max_len: int, eos_token_id: int) -> bool:
    """True when ``ids`` (a completion's token ids, as TRL's ``completion_ids``: up to and
    including eos) fill ``max_len`` tokens and the last is not eos.

    >>> truncated([5, 6, 2], 3, eos_token_id=2), truncated([5, 6, 7], 3, 2), truncated([5, 2], 3, 2)
    (False, True, False)
    """
    return len(ids) >= max_len and ids[-1] != eos_token_id


class TruncatedZero:
    """``fn``'s reward (a function or a built-in's name), 0.0 for a truncated completion: one
    that fills ``max_len`` tokens without ``eos_token_id``. Named ``<fn>_ended`` (a trainer's
    ``verifier`` can name it: correct where it gives > 0).

    >>> r = TruncatedZero("leading_match", max_len=4, eos_token_id=2)
    >>> r(["42 1", "42", "41"], completion_ids=[[4, 2, 0, 1], [4, 2, 2], [4, 1, 2]],
    ...   answer=["42"] * 3), r.__name__
    ([0.0, 1.0, 0.0], 'leading_match_ended')
    """

    labkit_inline = True  # labkit's own and cheap: the trainer's thread, no reward process

    def __init__(self, fn: RewardFn | str, max_len: int, eos_token_id: int):
        self.fn, self.max_len, self.eos_token_id = get_reward(fn), max_len, eos_token_id
        self.__name__ = f"{reward_name(self.fn)}_ended"

    def __call__(self, completions: list, completion_ids: list[list[int]], **kwargs) -> list:
        values = self.fn(completions=completions, completion_ids=completion_ids, **kwargs)
        return [
            0.0 if truncated(ids, self.max_len, self.eos_token_id) else v
            for v, ids in zip(values, completion_ids)
        ]
