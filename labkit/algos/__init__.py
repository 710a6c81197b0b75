"""The algorithms: one :class:`~labkit.algos.base.Trainer` base and a subclass per algorithm.

``base`` (the Trainer: model, device, optimizer step, run log, checkpoints, pause/resume/fork,
progress bar), ``config`` (a package: every algorithm's config, validated in one style, a module
per family), ``grpo`` (the GRPO family: GRPO, Dr. GRPO, DAPO, GSPO, CISPO, RLOO, REINFORCE),
``scoring`` (its reward side: reward functions, the runner, the score of a rollout), ``dapo``
(dynamic sampling and overlong shaping), ``zero_advantage`` (training on the rows with A != 0
only), ``ppo``, ``dpo``, ``reward_model`` (Bradley-Terry), ``sft``, ``pairs`` (preference pairs
from rollouts) and ``rlhf`` (SFT -> reward model -> RL, end to end).
"""
