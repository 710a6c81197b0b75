"""Classic RL before language models, on problems small enough to watch learn in seconds.

Modules: ``envs`` (tabular MDPs: FrozenLake, CliffWalking, a gridworld, a random walk),
``bandit``, ``dp`` (value and policy iteration), ``prediction`` (MC, TD(0), n-step,
TD(lambda)), ``control`` (Q-learning, SARSA), ``dqn`` (torch), ``pg`` (REINFORCE, actor-critic,
GAE), ``mcts`` (tic-tac-toe). Notebooks call them as ``lk.classic.value_iteration(...)``.
"""

from labkit.classic.bandit import bandit_testbed, run_bandit
from labkit.classic.control import (
    ControlConfig,
    epsilon_greedy,
    epsilon_greedy_probs,
    greedy_path,
    td_control,
    td_target,
)
from labkit.classic.dp import (
    greedy,
    policy_evaluation,
    policy_iteration,
    q_from_v,
    value_iteration,
)
from labkit.classic.envs import (
    TabularMDP,
    cliff_walking,
    from_gym,
    frozen_lake,
    gridworld,
    random_walk,
)
from labkit.classic.prediction import (
    Episode,
    bias_variance,
    estimators,
    mc_prediction,
    nstep_td_prediction,
    sample_episode,
    td0_prediction,
    td_lambda_prediction,
)

__all__ = [
    "ControlConfig",
    "Episode",
    "TabularMDP",
    "bandit_testbed",
    "bias_variance",
    "cliff_walking",
    "epsilon_greedy",
    "epsilon_greedy_probs",
    "estimators",
    "from_gym",
    "frozen_lake",
    "greedy",
    "greedy_path",
    "gridworld",
    "mc_prediction",
    "nstep_td_prediction",
    "policy_evaluation",
    "policy_iteration",
    "q_from_v",
    "random_walk",
    "run_bandit",
    "sample_episode",
    "td0_prediction",
    "td_control",
    "td_lambda_prediction",
    "td_target",
    "value_iteration",
]
