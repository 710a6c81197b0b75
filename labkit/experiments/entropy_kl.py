"""Entropy and KL on the tiny policy: what holds entropy up, what beta buys, where KL goes.

(a) Entropy collapse. GRPO sharpens the policy: the mean per-token entropy
    H_bar = sum_t m_t H(pi(. | y_<t)) / sum_t m_t (metric ``entropy``) falls over a run. Three
    knobs claimed to hold it: clip-higher, eps_high = 0.28 > eps_low = 0.2 (DAPO, 2503.14476,
    sec. 3.1: the upper clip caps how far a low-probability token can rise); an entropy bonus,
    L - c_H H_bar (``entropy_coef``; PPO 1707.06347 eq. 9); a hotter sampling temperature.
(b) The reward-vs-KL frontier: beta in the loss (k3, DeepSeekMath 2402.03300 eq. 3), swept;
    final reward and held-out accuracy against the final KL(pi_theta || pi_ref) (``kl/k3``).
(c) Where KL goes (seed 002: "KL in reward (k1): conservative; KL in loss (k3/k2): efficient
    exploration"), on PPO with a critic: r_t -= beta k1_t (InstructGPT 2203.02155) against
    beta k3 in the loss (GRPO's), same beta, and beta = 0 for reference.

Departures, and why:
- One seed per arm (the 2-core budget); the table says how big a gap is against the
  step-to-step spread of the last 10% of steps (``entropy sd``).
- ``entropy`` is the trainer's, from the logits of the FIRST inner update of each step, at the
  run's temperature tau: the tau = 1.2 arm reports the entropy of its tempered distribution.
- Held-out accuracy is sampled at tau = 1 for every arm (the same yardstick).
- GRPO runs the labs' base configuration made more off-policy, ``DRIFT``: mu = 4 updates per batch
  at lr 1e-3. With mu = 1 the ratio is 1 and nothing is clipped; at the base run's mu = 2, lr 5e-4
  the upper clip binds on ~0.4% of tokens (30 steps, seed 0), too rarely for clip-higher to act;
  at mu = 4, lr 1e-3 on ~2% (``clip/ratio_high``), closer to where DAPO used it.
"""

from __future__ import annotations

import pandas as pd
from tqdm.auto import tqdm

from labkit.algos.config import BASE_RUN as BASE
from labkit.algos.grpo import GRPOTrainer
from labkit.algos.ppo import PPOTrainer
from labkit.runs.evaluate import accuracy

CLAIM = (
    "RL on language models collapses the policy's entropy, and clip-higher (DAPO, Yu et al. "
    "2025, arXiv 2503.14476: eps_high = 0.28 keeps entropy up) or an entropy bonus (PPO, "
    "Schulman et al. 2017, arXiv 1707.06347, eq. 9) holds it. A KL penalty to pi_ref trades "
    "reward for closeness: the larger beta, the smaller the final KL and the lower the reward "
    "(DeepSeekMath 2402.03300 puts beta k3 in the loss; InstructGPT 2203.02155 puts beta k1 in "
    "the reward). Seed 002: KL in the reward is the conservative choice, in the loss the "
    "exploring one."
)
ENTROPY_ARMS = {
    "GRPO, eps 0.2": {},
    "clip-higher, eps_high 0.28": {"epsilon_high": 0.28},
    "entropy bonus, c_H 0.05": {"entropy_coef": 0.05},
    "temperature 1.2": {"temperature": 1.2},
}
DRIFT = BASE | {"num_iterations": 4, "learning_rate": 1e-3}
"""The GRPO configuration of every GRPO arm: the base run's, mu = 4 at lr 1e-3 (see the header)."""
BETAS = (0.0, 0.01, 0.04, 0.1, 0.3)
KL_ARMS = {
    "PPO, beta 0": {"beta": 0.0},
    "PPO, beta k1 in the reward": {"kl_in_reward": True, "kl_estimator": "k1"},
    "PPO, beta k3 in the loss": {"kl_in_reward": False, "kl_estimator": "k3"},
}


def summarise(trainer, log, heldout: int, seed: int) -> dict:
    """One table row of a finished run: first/last-10% means of entropy, reward and KL, the
    spread of the last 10% of entropy, and held-out accuracy sampled at tau = 1."""
    m = log.metrics
    n = max(1, len(m) // 10)
    last = m.iloc[-n:]
    row = {
        "entropy first": m["entropy"].iloc[:n].mean(),
        "entropy last": last["entropy"].mean(),
        "entropy sd": last["entropy"].std(ddof=0),
        "reward last": last["reward/mean"].mean(),
        "kl/k1 last": last["kl/k1"].mean(),
        "kl/k3 last": last["kl/k3"].mean(),
        "clip high": m["clip/ratio_high"].mean() if "clip/ratio_high" in m else float("nan"),
    }
    row["heldout acc"] = accuracy(
        trainer.model,
        trainer.tokenizer,
        trainer.task,
        trainer.task.heldout[:heldout],
        temperature=1.0,
        seed=seed + 1,
    )
    return row


def train(cls, label: str, steps: int, seed: int, heldout: int, **kw):
    """Train one arm (``cls`` GRPOTrainer or PPOTrainer), KL to pi_ref tracked: (RunLog, row)."""
    trainer = cls("tiny", seed=seed, track_kl=True, **(kw | {"max_steps": steps}))
    log = trainer.train(progress=False)
    return log, {"arm": label, **summarise(trainer, log, heldout, seed)}


def run(
    fast: bool = False,
    seed: int = 0,
    steps: int | None = None,
    ppo_steps: int | None = None,
    heldout: int | None = None,
    progress: bool = True,
) -> dict:
    """(a) the entropy arms and (b) the beta sweep on ``DRIFT`` (the base GRPO run, 32 x 4, made
    mu = 4 at lr 1e-3; beta = 0 is arm (a)'s first run), (c) PPO's KL placements at beta 0.1.

    Full: 60 GRPO steps, 60 PPO steps, 500 held-out prompts. Fast: 5, 3, 30.
    Returns ``{"entropy", "beta", "placement": DataFrame, "logs": {section: {arm: RunLog}},
    "config": dict}``."""
    steps, ppo_steps = steps or (5 if fast else 60), ppo_steps or (3 if fast else 60)
    heldout = heldout or (30 if fast else 500)
    jobs = [("entropy", GRPOTrainer, k, DRIFT | kw) for k, kw in ENTROPY_ARMS.items()]
    jobs += [("beta", GRPOTrainer, f"beta {b}", DRIFT | {"beta": b}) for b in BETAS if b > 0]
    jobs += [("placement", PPOTrainer, k, {"beta": 0.1} | kw) for k, kw in KL_ARMS.items()]
    logs, rows = (
        {"entropy": {}, "beta": {}, "placement": {}},
        {"entropy": [], "beta": [], "placement": []},
    )
    for section, cls, label, kw in tqdm(jobs, desc="runs", disable=not progress):
        n = ppo_steps if cls is PPOTrainer else steps
        logs[section][label], row = train(cls, label, n, seed, heldout, **kw)
        rows[section].append(row)
    beta0 = {**rows["entropy"][0], "arm": "beta 0.0"}
    logs["beta"] = {"beta 0.0": logs["entropy"]["GRPO, eps 0.2"], **logs["beta"]}
    beta = pd.DataFrame([beta0] + rows["beta"]).assign(beta=list(BETAS))
    cfg = {"steps": steps, "ppo_steps": ppo_steps, "heldout": heldout, "seed": seed, "grpo": DRIFT}
    return {
        "entropy": pd.DataFrame(rows["entropy"]).set_index("arm"),
        "beta": beta.set_index("arm"),
        "placement": pd.DataFrame(rows["placement"]).set_index("arm"),
        "logs": logs,
        "config": cfg,
    }


def monotone(x: pd.Series, increasing: bool) -> bool:
    """True when ``x`` never moves against the direction (ties allowed)."""
    d = x.diff().dropna()
    return bool((d >= 0).all() if increasing else (d <= 0).all())


def verdicts(results: dict) -> pd.DataFrame:
    """One row per claim: measured numbers and 'reproduced' / 'not reproduced', from the tables."""
    e, b, p = results["entropy"], results["beta"], results["placement"]
    base = e.loc["GRPO, eps 0.2"]
    rows = [
        {
            "claim": "GRPO collapses entropy",
            "measured": f"{base['entropy first']:.3f} -> {base['entropy last']:.3f}",
            "reproduced": base["entropy last"] < base["entropy first"],
        }
    ]
    for arm in list(e.index)[1:]:
        x = e.loc[arm]
        rows.append(
            {
                "claim": f"{arm} ends with higher entropy than GRPO",
                "measured": f"{x['entropy last']:.3f} vs {base['entropy last']:.3f} (sd "
                f"{base['entropy sd']:.3f}); acc {x['heldout acc']:.3f} vs "
                f"{base['heldout acc']:.3f}",
                "reproduced": x["entropy last"] > base["entropy last"],
            }
        )
    for k in ("kl/k3", "kl/k1"):  # k3 (in the loss) and k1 (log-ratio) can disagree
        rows.append(
            {
                "claim": f"final KL falls as beta rises ({k})",
                "measured": f"{k} " + ", ".join(f"{v:.4f}" for v in b[f"{k} last"]),
                "reproduced": monotone(b[f"{k} last"], False),
            }
        )
    rows.append(
        {
            "claim": "final reward falls as beta rises",
            "measured": "reward " + ", ".join(f"{v:.3f}" for v in b["reward last"]),
            "reproduced": monotone(b["reward last"], False),
        }
    )
    rw, ls = p.loc["PPO, beta k1 in the reward"], p.loc["PPO, beta k3 in the loss"]
    rows.append(
        {
            "claim": "KL in the reward is more conservative (lower KL) than in the loss",
            "measured": f"kl/k3 {rw['kl/k3 last']:.4f} vs {ls['kl/k3 last']:.4f}; reward "
            f"{rw['reward last']:.3f} vs {ls['reward last']:.3f}",
            "reproduced": rw["kl/k3 last"] < ls["kl/k3 last"],
        }
    )
    out = pd.DataFrame(rows)
    out["reproduced"] = out["reproduced"].map({True: "reproduced", False: "not reproduced"})
    return out


def verdict(results: dict) -> str:
    """Plain words, one line per claim, computed from the tables (one seed: see the sd)."""
    return "\n".join(
        f"{r.reproduced.upper()}: {r.claim} ({r.measured})." for r in verdicts(results).itertuples()
    )
