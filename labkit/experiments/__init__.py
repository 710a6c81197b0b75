"""Experiments the labs run and print: each states a paper's claim (``CLAIM``), runs it on the toy
and says plainly whether it reproduced. Experiments on the harness (``harness``: arms x seeds in
worker processes, ``claims``: the rule stated before the run and the verdict over seeds,
``results``: the stored full run a lab opens on, ``lk.experiments.load(name)``) have an
``EXPERIMENT``; the others still have ``run(fast=..., seed=...)`` and ``verdict``.

  double_dqn        DQN's overestimation against Q*; Double DQN and the dueling head (lab 23)
  gaussian_pg       a Gaussian policy on 1-D control: REINFORCE, a baseline, GAE (lab 24)
  alphazero         AlphaZero-style self-play on tic-tac-toe against random and MCTS (lab 25)
  dpo_vs_grpo       offline DPO, online DPO and GRPO on equal samples from one verifier (lab 37)
  ref_refresh       TR-DPO's moving pi_ref in GRPO and DPO: KL to pi_ref and to pi_0 (lab 35)
  kl_table          Schulman's KL table by Monte Carlo; KL in the reward vs as a loss (lab 10)
  why_not_learning  a healthy run against two faulty ones, named by the run doctor (lab 45)
  trpo              PG, TRPO, PPO-clip and PPO's adaptive KL, tabular and on the tiny LM (lab 33)
  lagrange          a length bound: a learned Lagrange multiplier against fixed penalties (lab 34)
  reward_hacking    an over-optimised learned reward; KL, a min-ensemble and PAR against it (lab 36)
  reward_design     a gameable partial-credit reward and its exact-match fix, over seeds (lab 40)
  trl_parity        the same batch through TRL's loss code and labkit's: values, gradients (lab 53)
  gpu, precision    the GPU lab's presets and CPU stand-in; log-prob error per precision (lab 51)
  tools             multi-turn GRPO: a calculator tool and a guessing game, env tokens masked (lab 60)
  clipping          clip fraction over mu x epsilon, clipped tokens (lab 73)
  pg_variance       REINFORCE, baselines, RLOO, GRPO, PPO: gradient variance and training (lab 74)
  passk             pass@k and maj@k before and after RL (lab 75)
  dr_grpo           Dr. GRPO's length and std biases (lab 76)
  dapo              DAPO's pieces, one at a time (lab 77)
  entropy_kl        entropy collapse and what holds it; the beta frontier; KL placement, under
                    stress: mu 4 at lr 1e-3 (lab 78)
  entropy_kl_base   its GRPO arms and claims at the base run's setting, where GRPO trains (lab 78)
  ppo_seed          PPO as the seed writes it: entropy term, KL clamp, value clipping (lab 79)
  ppo_seed_stress   the same arms at PPOTrainer's defaults (lr 1e-3), where every arm dips (lab 79)
  off_policy_base   GRPO vs GSPO vs CISPO off-policy (mu = 2) where plain GRPO trains (lab 80)
  off_policy        the same arms under off-policy stress (mu = 4, lr 1e-3): every arm falls (lab 80)
  v32_tricks_base   DeepSeek-V3.2's off-policy sequence masking and keep-sampling-mask (lab 81)
  v32_tricks        the same arms under lab 80's stress, where every arm falls (lab 81)
  token_vs_sequence the token objective's gradient against the sequence one's as pi drifts (lab 82)
  r1_zero           R1-Zero at toy scale: accuracy, thinking and length under RL (lab 90)
  r1_zero_graded    R1-Zero on the graded task: length and thinking where a thought pays (lab 90)
  cells             held-out stats per difficulty cell of the graded task (shared)
  language          R1's language-consistency reward against mixed notations (lab 91)
  kimi_length       Kimi k1.5's length reward, a plain one and long2short DPO on graded (lab 92)
  long2short        Kimi's long2short pairs on graded, thought against thought (lab 92)
  kimi_recheck      kimi_length from a cold start whose re-checks survive accuracy RL (lab 92)
  r1_pipeline       R1's stages: cold start, RL, rejection sampling, SFT, RL; distillation (lab 93)
  distill_graded    R1's distillation vs RL where the student cannot answer directly (lab 93)
  rft               DeepSeekMath's offline RFT, online RFT and GRPO on equal samples, graded (lab 94)
  prm               outcome vs process supervision in GRPO; learned ORM/PRM rewards (lab 95)
  prm_graded        outcome vs process GRPO on graded: the gain by chain length (lab 95)
  ppo_critic        PPO with step rewards: GAE's lambda, whitening, a critic warm-up (lab 95)
  search            best-of-N by ORM, PRM and vote; PRM-guided beam search (lab 96)
  curriculum        prioritized sampling by pass rate, an easy-first curriculum, uniform (lab 97)
  fused             held-out probes of a fused policy per switch; Qwen3's thinking budget (lab 98)
  adaptive_think    /think, /no_think, a thinking budget; AdaptThink's no-thinking bonus (lab 98)
"""

from labkit.experiments.results import load, stored

__all__ = ["load", "stored"]
