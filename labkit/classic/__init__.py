"""Classic RL before language models, on problems small enough to watch learn in seconds.

Notebooks call them as ``lk.classic.value_iteration(...)``.

  envs         tabular MDPs: FrozenLake, CliffWalking, a gridworld, a random walk
  bandit       the k-armed bandit testbed: explore vs exploit with one state
  dp           dynamic programming on a known model: value and policy iteration
  prediction   V^pi from sampled episodes: MC, TD(0), n-step TD, TD(lambda); bias and variance
  control      TD control without a model: Q-learning, SARSA, expected SARSA
  dqn          DQN (torch): a Q-network, experience replay, a target network; Double DQN
  dueling      the dueling head: Q = V + A - mean_a A
  overestimation  the maximization-bias chain with exact Q*; the max vs the double estimator
  pg           policy gradient: REINFORCE (reward-to-go, baseline), actor-critic, GAE
  pg_analysis  exact policy gradients, and the bias and variance of their estimates
  gaussian     a Gaussian policy for continuous actions: log-prob, entropy, score function
  continuous   a 1-D control task with a Riccati optimum; REINFORCE and GAE on the Gaussian
  mcts         Monte Carlo tree search and minimax on tic-tac-toe
  alphazero    PUCT search with a policy-value network
  self_play    AlphaZero's self-play loop on tic-tac-toe, matches against random and MCTS
  exercises    the classic labs' exercises, checked by ``lk.testing.check(name, answer)``
"""

# exercises registers lk.testing's checks; mcts: lk.classic.mcts.mcts(board), .minimax(board)
from labkit.classic import exercises, mcts  # noqa: F401
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
from labkit.classic.dqn import DQNConfig, dqn_loss, greedy_return, q_table, train_dqn
from labkit.classic.envs import (
    TabularMDP,
    cliff_walking,
    from_gym,
    frozen_lake,
    gridworld,
    random_walk,
)
from labkit.classic.pg import ADVANTAGES, Batch, PGConfig, advantages, pg_loss, rollout, train_pg
from labkit.classic.pg_analysis import (
    estimator_stats,
    exact_gradient,
    exact_objective,
    exact_values,
    gae_lambda_sweep,
    gradient_variance,
    per_episode_gradients,
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
    "ADVANTAGES",
    "Batch",
    "ControlConfig",
    "DQNConfig",
    "Episode",
    "PGConfig",
    "TabularMDP",
    "advantages",
    "bandit_testbed",
    "bias_variance",
    "cliff_walking",
    "dqn_loss",
    "epsilon_greedy",
    "epsilon_greedy_probs",
    "estimator_stats",
    "estimators",
    "exact_gradient",
    "exact_objective",
    "exact_values",
    "from_gym",
    "frozen_lake",
    "gae_lambda_sweep",
    "gradient_variance",
    "greedy",
    "greedy_path",
    "greedy_return",
    "gridworld",
    "mc_prediction",
    "mcts",
    "nstep_td_prediction",
    "per_episode_gradients",
    "pg_loss",
    "policy_evaluation",
    "policy_iteration",
    "q_from_v",
    "q_table",
    "random_walk",
    "rollout",
    "run_bandit",
    "sample_episode",
    "td0_prediction",
    "td_control",
    "td_lambda_prediction",
    "td_target",
    "train_dqn",
    "train_pg",
    "value_iteration",
]
