"""REINFORCE, a baseline, RLOO, GRPO, Dr. GRPO and PPO: the variance of their policy gradient at
a fixed policy, and training on the same budget.

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
of one estimate with E g);  cos(E g, E g_rloo) from the same U-statistic of the cross Gram.
A constant baseline b changes the variance by -2b E[r |s|^2] + b^2 E[|s|^2], s = grad log pi(o):
it helps only for 0 < b < 2 b*, b* = E[r |s|^2] / E[|s|^2] (Greensmith, Bartlett & Baxter 2004,
JMLR 5: the variance-optimal baseline), which :func:`score_norms` measures.

Departures, and why: PPO's gradient is its policy term only (the zero-initialised value head
sends no gradient into the shared trunk at step 0); prompts are fixed and only completions vary,
so the table isolates each estimator's own noise (the prompt sampler adds the same variance to
every unbiased estimator). Training varies only the advantage inside the labs' base configuration
(``BASE``: clipped token-mean loss, mu = 2); PPO gets ppo_epochs = mu on one minibatch, so every
method makes the same updates on the same number of samples.
"""

from __future__ import annotations

import copy
import random
import time

import pandas as pd
import torch
from tqdm.auto import tqdm

from labkit.algos.config import BASE_RUN as BASE
from labkit.algos.grpo import GRPOTrainer
from labkit.algos.ppo import PPOTrainer
from labkit.core.policy import policy_loss
from labkit.models.policy import load_policy
from labkit.models.rollout import Rollout, completion_logprobs, rollout
from labkit.runs.evaluate import accuracy
from labkit.tasks.base import max_completion_tokens

CLAIM = (
    "A baseline leaves the policy gradient unbiased and lowers its variance (Williams 1992; "
    "Sutton & Barto 2018, ch. 13.4). RLOO (Ahmadian et al. 2024, 'Back to Basics: Revisiting "
    "REINFORCE Style Optimization for Learning from Human Feedback in LLMs', arXiv 2402.14740) "
    "takes the mean reward of the prompt's other G-1 samples as the baseline and beats vanilla "
    "REINFORCE and PPO; GRPO (DeepSeekMath, arXiv 2402.03300) uses the group mean and std and so "
    "drops PPO's critic, a second model of the policy's size. Seeds 001, 002, 004: variance "
    "REINFORCE > REINFORCE with a baseline > RLOO/GRPO, and GRPO = PPO - value model."
)
ESTIMATORS = {  # key -> (label, GRPOConfig overrides; None: PPOTrainer)
    "reinforce": ("REINFORCE", {"advantage_estimator": "reinforce"}),
    "reinforce_mean": ("REINFORCE + mean baseline", {"advantage_estimator": "reinforce_mean"}),
    "rloo": ("RLOO", {"advantage_estimator": "rloo"}),
    "grpo": ("GRPO", {"advantage_estimator": "grpo", "scale_rewards": "group"}),
    "dr_grpo": ("Dr. GRPO", {"advantage_estimator": "grpo", "scale_rewards": "none"}),
    "ppo": ("PPO", None),
}


def make_trainer(key: str, model="tiny", tokenizer=None, **config):
    """The trainer of estimator ``key``; PPO makes ppo_epochs = mu updates on one minibatch.

    >>> make_trainer("dr_grpo", max_steps=1).config.scale_rewards
    'none'
    """
    over = ESTIMATORS[key][1]
    if over is None:
        mu = config.pop("num_iterations", 1)
        return PPOTrainer(model, tokenizer=tokenizer, ppo_epochs=mu, num_mini_batches=1, **config)
    return GRPOTrainer(model, tokenizer=tokenizer, **config, **over)


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
        r = trainer.score(r)
        r.rewards = r.rewards + shift  # [B]
        out.append(r)
    return out


def policy_gradients(trainers: list, r: Rollout) -> torch.Tensor:
    """The REINFORCE-style gradient of each trainer's advantages on rollout ``r`` (one shared
    policy, one forward), flattened over the parameters: [E, N]. No optimizer step."""
    model = trainers[0].model
    params = [p for p in model.parameters() if p.requires_grad]
    logp = completion_logprobs(model, r, trainers[0].config.temperature or 1.0)  # [B, T]
    out = []
    for t in trainers:
        rt = t.prepare(copy.copy(r))  # advantages [B] or [B, T], loss mask [B, T]
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
    |E g| / |E g_ref| from the cross Gram's off-diagonal (its diagonal shares completions)."""
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
            }
        )
    return pd.DataFrame(rows)


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
    """:func:`variance_table` of every estimator at the fixed policy ``model``, all on the same K
    batches (the same prompts and completions)."""
    if isinstance(model, str):  # one policy object under every estimator
        model, tokenizer = load_policy(model)
    common = {
        "num_generations": BASE["num_generations"],
        "prompts_per_step": prompts,
        "reward_funcs": BASE["reward_funcs"],
        "track_kl": False,
        "beta": 0.0,
    }
    trainers = [make_trainer(k, model, tokenizer, **common) for k in keys]
    batches = fixed_batches(trainers[0], prompts, K, seed, shift, progress)
    grads = torch.stack(
        [
            policy_gradients(trainers, r)
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


def _reach(log, level: float, window: int = 20) -> tuple[float, float]:
    """(steps, training seconds) until the moving mean of reward/mean reaches ``level``; NaN if
    never."""
    m = log.metrics
    hit = (m["reward/mean"].rolling(window, min_periods=1).mean() >= level).to_numpy()
    if not hit.any():
        return float("nan"), float("nan")
    i = int(hit.argmax())
    return float(i + 1), float(m["time/step"][: i + 1].sum())


def train_one(key: str, steps: int, seed: int = 0, heldout: int = 2000, progress: bool = False):
    """The base run with estimator ``key``: (trainer, RunLog, its row of the training table)."""
    trainer = make_trainer(key, "tiny", seed=seed, **(BASE | {"max_steps": steps}))
    t0 = time.perf_counter()
    log = trainer.train(progress=progress)
    wall, r, n = time.perf_counter() - t0, log.metrics["reward/mean"], max(1, steps // 10)
    acc = accuracy(
        trainer.model,
        trainer.tokenizer,
        trainer.task,
        trainer.task.heldout[:heldout],
        temperature=1.0,
        seed=seed + 1,
    )
    head = getattr(trainer, "value_head", None)
    return (
        trainer,
        log,
        {
            "estimator": ESTIMATORS[key][0],
            "key": key,
            "heldout acc": acc,
            "reward first 10%": r[:n].mean(),
            "reward last 10%": r[-n:].mean(),
            "reward per sample": r.mean(),
            "wall s": wall,
            **dict(zip(["steps to reward 0.8", "s to reward 0.8"], _reach(log, 0.8))),
            "value-head params": 0 if head is None else sum(p.numel() for p in head.parameters()),
            "state MiB": state_mib(trainer),
        },
    )


def run(
    fast: bool = False,
    seed: int = 0,
    K: int | None = None,
    steps: int | None = None,
    prompts: int | None = None,
    heldout: int | None = None,
    progress: bool = True,
) -> dict:
    """(b) every estimator trained on the base run's budget (same seed); (a) the gradient variance
    of every estimator at the cold start, at the cold start with rewards r - 1, and at the
    policy GRPO trained in (b). Full: 600 steps, 2000 held-out prompts, K = 64 batches of 32 x 4.
    Fast: 5 steps, 200 held-out, K = 8 batches of 16 x 4. Returns ``{"variance", "training":
    DataFrame, "score_norms": {setting: dict}, "logs": {label: RunLog}, "config"}``."""
    K, steps = K or (8 if fast else 64), steps or (5 if fast else BASE["max_steps"])
    prompts, heldout = prompts or (16 if fast else 32), heldout or (200 if fast else 2000)
    rows, logs, trained = [], {}, {}
    for key in tqdm(ESTIMATORS, desc="training", disable=not progress):
        trained[key], logs[ESTIMATORS[key][0]], row = train_one(key, steps, seed, heldout)
        rows.append(row)
    grpo, kw = trained["grpo"], {"K": K, "prompts": prompts, "seed": seed, "progress": progress}
    after = f"after {steps} GRPO steps"
    var = [
        variance(**kw).assign(setting="cold start"),
        variance(shift=-1.0, **kw).assign(setting="cold start, reward r - 1"),
        variance(grpo.model, grpo.tokenizer, **kw).assign(setting=after),
    ]
    norms = {
        "cold start": score_norms(seed=seed),
        after: score_norms(grpo.model, grpo.tokenizer, seed=seed),
    }
    cfg = {
        "K": K,
        "prompts": prompts,
        "G": BASE["num_generations"],
        "steps": steps,
        "heldout": heldout,
        "seed": seed,
        "policy params": grpo.model.num_parameters(),
    }
    return {
        "variance": pd.concat(var, ignore_index=True),
        "score_norms": norms,
        "training": pd.DataFrame(rows),
        "logs": logs,
        "config": cfg,
    }


def _var_row(setting: str, v: pd.DataFrame, hi: str, lo: str) -> dict:
    """Claim rel. var[hi] > rel. var[lo]; 'clearly' when the gap passes 2 jackknife SEs."""
    x, y = v.loc[hi, "rel_var"], v.loc[lo, "rel_var"]
    se = float(v.loc[[hi, lo], "rel_var se"].pow(2).sum() ** 0.5)
    return {
        "claim": f"variance {ESTIMATORS[hi][0]} > {ESTIMATORS[lo][0]}",
        "setting": setting,
        "measured": f"rel. var {x:.2f} vs {y:.2f} (SE of the gap {se:.2f})",
        "reproduced": f"{'yes' if x > y else 'no'}, "
        f"{'clearly' if abs(x - y) > 2 * se else 'within noise'}",
    }


def _acc_row(t: pd.DataFrame, a: str, b: str, margin: float, tie_ok: bool) -> dict:
    """Claim held-out accuracy a > b (a >= b - margin when ``tie_ok``); one seed."""
    x, y = t.loc[a, "heldout acc"], t.loc[b, "heldout acc"]
    ok = x - y >= -margin if tie_ok else x - y > margin
    return {
        "claim": f"accuracy {ESTIMATORS[a][0]} {'>=' if tie_ok else '>'} {ESTIMATORS[b][0]}",
        "setting": "same budget",
        "measured": f"held-out {x:.3f} vs {y:.3f}",
        "reproduced": ("yes" if ok else "no") + (", a tie" if abs(x - y) <= margin else ""),
    }


def orderings(results: dict, margin: float = 0.02) -> pd.DataFrame:
    """One row per claimed ordering: what was measured, and whether the toy reproduced it.
    Accuracy gaps within ``margin`` are ties (one seed; 2000 held-out samples: SE ~0.01)."""
    var, t, rows = results["variance"], results["training"].set_index("key"), []
    for setting, v in var.groupby("setting", sort=False):
        v = v.set_index("key")
        cos = v.loc[["reinforce", "reinforce_mean", "grpo", "ppo"], "cos(E g, E g_rloo)"]
        rows.append(
            {
                "claim": "a baseline leaves E g unchanged",
                "setting": setting,
                "measured": "cos(E g, E g_RLOO): REINFORCE, mean baseline, GRPO, PPO "
                + ", ".join(f"{x:.3f}" for x in cos),
                "reproduced": "yes" if cos.iloc[:2].gt(0.95).all() else "no",
            }
        )
        rows += [
            _var_row(setting, v, hi, lo)
            for hi, lo in [
                ("reinforce", "reinforce_mean"),
                ("reinforce", "rloo"),
                ("reinforce_mean", "rloo"),
            ]
        ]
    rows += [
        _acc_row(t, "rloo", "reinforce", margin, False),
        _acc_row(t, "rloo", "ppo", margin, False),
        _acc_row(t, "grpo", "ppo", margin, True),
    ]
    N, ppo, grpo = results["config"]["policy params"], t.loc["ppo"], t.loc["grpo"]
    rows.append(
        {
            "claim": "PPO's critic costs memory",
            "setting": "same budget",
            "measured": f"value head {ppo['value-head params']} parameters; state "
            f"{ppo['state MiB']:.2f} vs {grpo['state MiB']:.2f} MiB; a separate "
            f"critic the policy's size: +{N * 16 / 2**20:.1f} MiB",
            "reproduced": "only for a separate critic (labkit's shares the trunk)",
        }
    )
    return pd.DataFrame(rows)


def verdict(results: dict, margin: float = 0.02) -> str:
    """Plain words with the numbers: each claimed ordering, reproduced or not, and why the
    baselines did or did not lower the variance (b* against the mean reward)."""
    lines = [
        f"[{r.reproduced}] {r.claim} ({r.setting}): {r.measured}."
        for r in orderings(results, margin).itertuples()
    ]
    lines += [
        f"Why, {s}: the variance-optimal constant baseline b* = E[r |s|^2] / E[|s|^2] = "
        f"{n['b_star']:.2f}, the mean reward {n['mean_reward']:.2f}; a constant b lowers "
        f"the variance only for 0 < b < 2 b* = {2 * n['b_star']:.2f}."
        for s, n in results["score_norms"].items()
    ]
    t, cfg = results["training"].set_index("estimator"), results["config"]
    lines.append(
        f"After {cfg['steps']} steps of 32 x 4 (seed {cfg['seed']}), held-out sampled "
        "accuracy (steps to a reward of 0.8): "
        + ", ".join(
            f"{k} {a:.3f} ({s:.0f})"
            for k, a, s in zip(t.index, t["heldout acc"], t["steps to reward 0.8"])
        )
        + "."
    )
    return "\n".join(lines)
