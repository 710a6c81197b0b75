"""The variance of a policy-gradient estimator at a fixed policy, from the Gram matrix of its
gradients on independent batches: the measuring instrument of lab 74 (``pg_variance``).

Each estimator g is the gradient of the loss -1/B sum_{i,t} A_{i,t} log pi(o_{i,t} | q_i, o_{i,<t})
(minus the policy-gradient estimate) on B = prompts x G completions, ``loss_type="reinforce"``
for every one (ratio 1, no clipping), with
    reinforce       A_i = r_i                                   (Williams 1992; S&B eq. 13.8)
    reinforce_mean  A_i = r_i - mean_batch(r)                   (a constant baseline, S&B 13.11)
    rloo            A_i = r_i - 1/(G-1) sum_{j != i} r_j        (Ahmadian et al. 2402.14740)
    grpo            A_i = (r_i - mean_G(r)) / (std_G(r) + 1e-4) (DeepSeekMath 2402.03300, eq. 3)
    dr_grpo         A_i = r_i - mean_G(r) = (G-1)/G x RLOO's     (Dr. GRPO 2503.20783)
    ppo             A_{i,t} = whiten(GAE_{gamma=1, lam=0.95}(r, V)), V the value head at step 0.
From the Gram matrix G_jk = <g_j, g_k> of K gradients on independent completions of the same
prompts:  tr Cov = 1/(K-1) sum_k ||g_k - g_bar||^2;  ||E g||^2 = 1/(K(K-1)) sum_{j!=k} <g_j, g_k>
(unbiased);  relative variance tr Cov / ||E g||^2 (scale-free; 1/sqrt(1 + it) is the RMS cosine
of one estimate with E g);  <E g, E g_ref> from the same U-statistic of the cross Gram, hence
cos(E g, E g_ref) and the squared distance ||E g - E g_ref||^2 / ||E g_ref||^2 (unbiased in its
numerator: it can come out below 0 by noise).
A constant baseline b changes the variance by -2b E[r |s|^2] + b^2 E[|s|^2], s = grad log pi(o):
it helps only for 0 < b < 2 b*, b* = E[r |s|^2] / E[|s|^2] (Greensmith, Bartlett & Baxter 2004,
JMLR 5: the variance-optimal baseline), which :func:`score_norms` measures.

Departures, and why: PPO's gradient is its policy term only (the zero-initialised value head
sends no gradient into the shared trunk at step 0); prompts are fixed and only completions vary,
so the statistics isolate each estimator's own noise (the prompt sampler adds the same variance
to every unbiased estimator).
"""

from __future__ import annotations

import copy
import random

import pandas as pd
import torch
from tqdm.auto import tqdm

from labkit.algos.config import BASE_RUN as BASE
from labkit.algos.grpo import GRPOTrainer
from labkit.algos.ppo import PPOTrainer
from labkit.core.policy import policy_loss
from labkit.models.policy import load_policy
from labkit.models.rollout import Rollout, completion_logprobs, rollout
from labkit.tasks.base import max_completion_tokens

ESTIMATORS = {  # key -> (label, config overrides); "ppo" trains with PPOTrainer
    "reinforce": ("REINFORCE", {"advantage_estimator": "reinforce"}),
    "reinforce_mean": ("REINFORCE + mean baseline", {"advantage_estimator": "reinforce_mean"}),
    "rloo": ("RLOO", {"advantage_estimator": "rloo"}),
    "grpo": ("GRPO", {"advantage_estimator": "grpo", "scale_rewards": "group"}),
    "dr_grpo": ("Dr. GRPO", {"advantage_estimator": "grpo", "scale_rewards": "none"}),
    "ppo": ("PPO", {"num_mini_batches": 1}),
}


def estimator_config(key: str, config: dict) -> dict:
    """``config`` with estimator ``key``'s advantage; for PPO, mu (``num_iterations``, default
    1) becomes ``ppo_epochs`` on one minibatch: the updates GRPO makes on the same samples.

    >>> estimator_config("ppo", {"num_iterations": 2})
    {'num_mini_batches': 1, 'ppo_epochs': 2}
    """
    config = dict(config) | ESTIMATORS[key][1]
    if key == "ppo":
        config["ppo_epochs"] = config.pop("num_iterations", 1)
    return config


def trainer_class(key: str) -> type:
    """PPOTrainer for ``"ppo"``, GRPOTrainer for the rest."""
    return PPOTrainer if key == "ppo" else GRPOTrainer


def make_trainer(key: str, model="tiny", tokenizer=None, **config):
    """The trainer of estimator ``key`` (:func:`estimator_config`).

    >>> make_trainer("dr_grpo", max_steps=1).config.scale_rewards
    'none'
    """
    return trainer_class(key)(model, tokenizer=tokenizer, **estimator_config(key, config))


def fixed_batches(
    trainer, prompts: int, K: int, seed: int = 0, shift: float = 0.0, progress: bool = False
) -> list[Rollout]:
    """K scored rollouts of the same ``prompts`` train prompts x G, each sampled with its own
    generator: only the completions differ. ``shift`` is added to every reward (moves its zero)."""
    G, task, out = trainer.config.num_generations, trainer.task, []
    examples = [e for e in random.Random(seed).sample(task.train, prompts) for _ in range(G)]
    for k in tqdm(range(K), desc="sampling", disable=not progress):
        r = rollout(
            trainer.model,
            trainer.tokenizer,
            [e.prompt for e in examples],
            max_completion_tokens(task),
            temperature=trainer.config.temperature,
            generator=torch.Generator().manual_seed(10_000 * seed + k),
        )
        r.examples = examples
        out.append(shifted(trainer.score(r), shift))
    return out


def shifted(r: Rollout, shift: float) -> Rollout:
    """The same completions with every reward moved by ``shift`` (a shallow copy)."""
    if not shift:
        return r
    r = copy.copy(r)
    r.rewards = r.rewards + shift  # [B]
    return r


def policy_gradients(pairs) -> torch.Tensor:
    """The REINFORCE-style gradient of each (trainer, rollout) pair's advantages, flattened over
    the parameters: [E, N]. The pairs share one policy and one set of completions (rewards may
    differ), so one forward serves them all. No optimizer step."""
    trainer, r = pairs[0]
    params = [p for p in trainer.model.parameters() if p.requires_grad]
    logp = completion_logprobs(trainer.model, r, trainer.config.temperature or 1.0)  # [B, T]
    out = []
    for t, rt in pairs:
        rt = t.prepare(copy.copy(rt))  # advantages [B] or [B, T], loss mask [B, T]
        loss, _ = policy_loss(
            logp, logp.detach(), rt.advantages, rt.loss_mask, loss_type="reinforce"
        )
        grads = torch.autograd.grad(loss, params, retain_graph=True)
        out.append(torch.cat([g.reshape(-1) for g in grads]))  # [N]
    return torch.stack(out)  # [E, N]


def gram_stats(gram: torch.Tensor) -> dict:
    """tr Cov, ||E g||^2 (``sq_mean``), relative variance, RMS cosine and the mean cosine of each
    g_k with the mean of the other K-1 (``loo_cos``), from the Gram matrix [K, K].

    >>> st = gram_stats(torch.tensor([[1., 0.], [0., 1.]]))  # g = e1, e2
    >>> st["tr_cov"], st["sq_mean"], st["loo_cos"]
    (1.0, 0.0, 0.0)
    """
    K, tr, total = gram.shape[0], gram.trace(), gram.sum()
    d, rows = gram.diag(), gram.sum(1)  # [K] ||g_k||^2, <g_k, S>
    tr_cov = (tr - total / K) / (K - 1)
    sq_mean = (total - tr) / (K * (K - 1))  # the mean off-diagonal <g_j, g_k>
    others = (total - 2 * rows + d).clamp(min=1e-30).sqrt()  # [K] ||S - g_k||
    loo = (rows - d) / (d.clamp(min=1e-30).sqrt() * others)  # [K]
    rel = tr_cov / sq_mean
    return {
        "tr_cov": float(tr_cov),
        "sq_mean": float(sq_mean),
        "rel_var": float(rel),
        "rms_cos": float((1 + rel).clamp(min=0).rsqrt()),
        "loo_cos": float(loo.mean()),
    }


def jackknife_se(gram: torch.Tensor, stat: str) -> float:
    """Leave-one-batch-out jackknife standard error of ``gram_stats(gram)[stat]``."""
    K = gram.shape[0]
    keep = [[j for j in range(K) if j != i] for i in range(K)]
    v = torch.tensor([gram_stats(gram[k][:, k])[stat] for k in keep])  # [K]
    return float(((K - 1) / K * ((v - v.mean()) ** 2).sum()).sqrt())


def variance_table(grads: torch.Tensor, keys: list[str], ref: str = "rloo") -> pd.DataFrame:
    """One row per estimator from ``grads`` [E, K, N] (batch k shared by all E): its
    :func:`gram_stats`, the jackknife SE of its relative variance, and cos(E g, E g_ref),
    |E g| / |E g_ref| and ||E g - E g_ref||^2 / ||E g_ref||^2 from the cross Gram's
    off-diagonal (its diagonal shares completions)."""
    E, K, N = grads.shape
    gram = grads.reshape(E * K, N) @ grads.reshape(E * K, N).T  # [EK, EK]
    block = lambda a, b: gram[a * K : (a + 1) * K, b * K : (b + 1) * K]  # [K, K]
    r, rows = keys.index(ref), []
    for e, key in enumerate(keys):
        st, sq_ref, cross = gram_stats(block(e, e)), gram_stats(block(r, r))["sq_mean"], block(e, r)
        dot = float((cross.sum() - cross.trace()) / (K * (K - 1)))  # <E g, E g_ref>
        rows.append(
            {
                "estimator": ESTIMATORS[key][0],
                "key": key,
                **st,
                "rel_var se": jackknife_se(block(e, e), "rel_var"),
                f"cos(E g, E g_{ref})": dot / (st["sq_mean"] * sq_ref) ** 0.5,
                f"|E g| / |E g_{ref}|": (st["sq_mean"] / sq_ref) ** 0.5,
                f"|E g - E g_{ref}|^2 / |E g_{ref}|^2": (st["sq_mean"] + sq_ref - 2 * dot) / sq_ref,
            }
        )
    return pd.DataFrame(rows)


def probe_config(prompts: int) -> dict:
    """The base run's batch shape and reward, no KL: what every estimator's gradient is measured
    under (the loss is ``loss_type="reinforce"`` whatever the config says)."""
    return {
        "num_generations": BASE["num_generations"],
        "prompts_per_step": prompts,
        "reward_funcs": BASE["reward_funcs"],
        "track_kl": False,
        "beta": 0.0,
    }


def variance(
    model="tiny",
    tokenizer=None,
    K: int = 64,
    prompts: int = 32,
    seed: int = 0,
    shift: float = 0.0,
    keys=tuple(ESTIMATORS),
    progress: bool = True,
) -> pd.DataFrame:
    """:func:`variance_table` of every estimator in ``keys`` at the fixed policy ``model``, all
    on the same K batches (the same prompts and completions; memory: E x K x N floats)."""
    if isinstance(model, str):  # one policy object under every estimator
        model, tokenizer = load_policy(model)
    common = probe_config(prompts)
    trainers = [make_trainer(k, model, tokenizer, **common) for k in keys]
    batches = fixed_batches(trainers[0], prompts, K, seed, shift, progress)
    grads = torch.stack(
        [
            policy_gradients([(t, r) for t in trainers])
            for r in tqdm(batches, desc="gradients", disable=not progress)
        ],
        1,
    )  # [E, K, N]
    mean_r = float(torch.cat([r.rewards for r in batches]).mean())
    return variance_table(grads, list(keys)).assign(reward_mean=mean_r)


def score_norms(model="tiny", tokenizer=None, prompts: int = 8, seed: int = 0) -> dict:
    """|s|^2 = ||grad log pi(o)||^2 per completion by reward, and the variance-optimal constant
    baseline b* = sum r |s|^2 / sum |s|^2 next to the mean reward (a backward per completion)."""
    t = make_trainer(
        "reinforce",
        model,
        tokenizer,
        num_generations=BASE["num_generations"],
        prompts_per_step=prompts,
        reward_funcs=BASE["reward_funcs"],
        track_kl=False,
    )
    r = fixed_batches(t, prompts, 1, seed + 1)[0]
    params = [p for p in t.model.parameters() if p.requires_grad]
    seq = (completion_logprobs(t.model, r) * r.completion_mask).sum(1)  # [B] log pi(o_i | q_i)
    sq = torch.stack(
        [sum((g**2).sum() for g in torch.autograd.grad(s, params, retain_graph=True)) for s in seq]
    )  # [B]
    df = pd.DataFrame(
        {"reward": r.rewards.tolist(), "|s|^2": sq.tolist(), "-log pi(o)": (-seq).tolist()}
    )
    table = df.groupby("reward").agg(
        n=("|s|^2", "size"),
        **{"mean |s|^2": ("|s|^2", "mean"), "mean -log pi(o)": ("-log pi(o)", "mean")},
    )
    return {
        "table": table,
        "b_star": float((r.rewards * sq).sum() / sq.sum()),
        "mean_reward": float(r.rewards.mean()),
    }


def state_mib(trainer) -> float:
    """MiB of training state: parameters held (policy, pi_ref, value head), gradients, AdamW.
    Exact, where a process's RSS (~0.5 GiB of runtime) cannot resolve a 129-parameter head."""
    mods = [trainer.model, trainer.ref_model, getattr(trainer, "value_head", None)]
    tensors = [p for m in mods if m is not None for p in m.parameters()]
    tensors += [p.grad for p in trainer.params if p.grad is not None]
    tensors += [
        v
        for s in trainer.optimizer.state.values()
        for v in s.values()
        if torch.is_tensor(v) and v.dim() > 0
    ]
    return sum(t.numel() * t.element_size() for t in tensors) / 2**20
