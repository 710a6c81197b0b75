"""The run doctor: "why isn't it learning?" answered from the run log alone.

``diagnose(run)`` reads only a run's metrics, samples, config and events (a labkit run, or a TRL
run logged by :class:`labkit.RunLogCallback`, where some columns are missing: a rule whose
evidence is not in the log stays silent). Each rule that fires gives the steps and the numbers
it saw and the fix to try. Thresholds are the usual rules of thumb (TRL's and verl's docs,
the DAPO paper arXiv:2503.14476 for zero-spread groups and overlong completions); they are
named constants here, so a lab can show and change them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import pandas as pd

ZERO_SPREAD = 0.8  # fraction of groups whose G rewards are all equal (no advantage, no gradient)
TRUNCATED = 0.8  # fraction of completions cut at max_completion_length
DOMINATES = 0.95  # share of the weighted reward's variance from one function
HACK_RISE, HACK_ACC = 2.0, 0.02  # reward up by >= 2 std of its per-step values; accuracy < 0.02
ENTROPY_DROP = 0.1  # entropy under 10 % of its start
KL_MAX, RATIO_MAX = 1.0, 10.0  # per-token KL to pi_ref, importance ratio
SUSTAIN = 5  # steps: a blow-up is a rolling median over this many steps past the limit
# (single steps are not: k3's heavy tail and the max ratio over every token and inner update
# spike on healthy runs; the 600-step demo has kl/k3 up to 2.5 and ratio/max up to 20 on a few
# isolated steps while its rolling medians stay near 0.25 and 1.4)
CLIP_HIGH = 0.3  # clipped fraction of tokens
GRAD_SPIKE = 10.0  # grad_norm over 10 x the run's median
LR_RANGE = (1e-7, 1e-2)  # outside: too low / too high for Adam on a policy
ADV_ZERO = 1e-3  # mean |A| below this on most steps


@dataclass
class Finding:
    """One rule that fired: what, where (steps), the numbers, and the fix to try."""

    rule: str
    steps: str
    evidence: str
    fix: str


class Diagnosis(list):
    """The findings of :func:`diagnose` (a list); empty when nothing fired. ``versions``: which
    reward version (functions, source hashes, weights) produced which steps."""

    versions: pd.DataFrame = pd.DataFrame(columns=["steps", "reward_version"])

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame([asdict(f) for f in self], columns=["rule", "steps", "evidence", "fix"])

    def __str__(self) -> str:
        head = (
            "no warning: nothing in the run log matches a known failure"
            if not self
            else "\n".join(
                f"[{f.rule}] steps {f.steps}: {f.evidence}\n    fix: {f.fix}" for f in self
            )
        )
        if len(self.versions) > 1:
            head += "\nreward versions:\n" + self.versions.to_string(index=False)
        return head

    def _repr_html_(self) -> str:
        body = " no warning." if not self else self.frame().to_html(index=False)
        if len(self.versions) > 1:
            body += "<b>Reward versions</b>" + self.versions.to_html(index=False)
        return "<b>Run doctor:</b>" + body


def _steps(m: pd.DataFrame, mask) -> str:
    s = list(m.loc[mask, "step"]) if "step" in m else []
    if not s:
        return "-"
    return f"{s[0]}-{s[-1]} ({len(s)} of {len(m)})" if len(s) > 1 else str(s[0])


def _col(m: pd.DataFrame, key: str) -> pd.Series | None:
    if key not in m:
        return None
    v = pd.to_numeric(m[key], errors="coerce")
    return v if v.notna().any() else None


def _reward_columns(s: pd.DataFrame) -> list[str]:
    return [
        c
        for c in s.columns
        if c.startswith("rewards/") and pd.to_numeric(s[c], errors="coerce").notna().any()
    ]


def rule_zero_spread(m, s, cfg) -> list[Finding]:
    """Groups whose rewards are all equal give A = 0: no gradient (per reward function)."""
    out = []
    if len(s) and {"step", "group"} <= set(s.columns):
        for c in ["reward", *_reward_columns(s)]:
            r = pd.to_numeric(s[c], errors="coerce").fillna(0.0)
            g = r.groupby([s["step"], s["group"]])
            flat = (g.max() - g.min()) == 0  # one row per (step, group)
            if len(flat) and flat.mean() >= ZERO_SPREAD:
                level = g.mean()[flat]
                lo, hi = r.min(), r.max()
                kind = (
                    f"every reward is {lo:g}"
                    if lo == hi
                    else f"{(level == lo).mean():.0%} all at the lowest ({lo:g}), "
                    f"{(level == hi).mean():.0%} all at the highest ({hi:g})"
                )
                out.append(
                    Finding(
                        f"zero_spread[{c}]",
                        f"all {s['step'].nunique()} steps",
                        f"{flat.mean():.0%} of groups have zero spread in {c!r}: {kind}",
                        "give partial credit (a denser reward), raise "
                        "num_generations, pick prompts of the right difficulty, or "
                        "dynamic_sampling=True",
                    )
                )
        return out
    f = _col(m, "adv/frac_zero_std")
    if f is not None and f.mean() >= ZERO_SPREAD:
        out.append(
            Finding(
                "zero_spread",
                _steps(m, f >= ZERO_SPREAD),
                f"mean adv/frac_zero_std {f.mean():.2f}",
                "a denser reward, more generations per prompt, or dynamic_sampling=True",
            )
        )
    return out


def rule_truncation(m, s, cfg) -> list[Finding]:
    """Most completions cut at max_completion_length: the reward sees unfinished answers."""
    t = _col(m, "len/truncated_frac")
    if t is None or t.mean() < TRUNCATED:
        return []
    return [
        Finding(
            "truncation",
            _steps(m, t >= TRUNCATED),
            f"mean len/truncated_frac {t.mean():.2f} (max_completion_length="
            f"{cfg.get('max_completion_length')})",
            "raise max_completion_length, or "
            "shape length: overlong_buffer (DAPO) or mask_truncated_completions=True",
        )
    ]


def rule_reward_functions(m, s, cfg) -> list[Finding]:
    """A reward function that never varies, that never matches (format), or that dominates."""
    cols = _reward_columns(s) if len(s) else []
    out, parts = [], {}
    names = cfg.get("reward_funcs") or []
    weights = cfg.get("reward_weights") or [1.0] * len(names)
    w = dict(zip(names, weights))
    for c in cols:
        r = pd.to_numeric(s[c], errors="coerce").dropna()
        name = c.split("/", 1)[1]
        if "format" in name and r.max() <= 0:
            out.append(
                Finding(
                    f"format_never_matched[{name}]",
                    "all",
                    f"{name} is {r.max():g} on all {len(r)} completions",
                    "print a few completions next "
                    "to the pattern: the tags or the regex do not match what the "
                    "model writes (a cold start with the format first helps)",
                )
            )
        elif r.nunique() <= 1:
            out.append(
                Finding(
                    f"never_varies[{name}]",
                    "all",
                    f"{name} is {r.iloc[0]:g} on all {len(r)} completions",
                    "test it on varied completions "
                    "(lk.reward_bench); a bug, or a condition never met",
                )
            )
        parts[name] = r * w.get(name, 1.0)
    if len(parts) >= 2:
        var = {n: v.var() for n, v in parts.items()}
        total = sum(var.values())
        top = max(var, key=var.get)
        if total > 0 and var[top] / total >= DOMINATES:
            out.append(
                Finding(
                    f"dominates[{top}]",
                    "all",
                    f"{top} carries {var[top] / total:.0%} of the weighted reward's variance",
                    "rescale reward_weights so each function can move the advantage",
                )
            )
    return out


def _thirds(v: pd.Series) -> tuple[float, float]:
    k = max(1, len(v) // 3)
    return v.iloc[:k].mean(), v.iloc[-k:].mean()


def rule_reward_hacking(m, s, cfg) -> list[Finding]:
    """Reward rises while accuracy (the verifier) does not: the policy games the reward."""
    r, acc = _col(m, "reward/mean"), _col(m, "accuracy")
    if r is None or acc is None or len(r) < 6:
        return []
    (r0, r1), (a0, a1) = _thirds(r), _thirds(acc)
    if not r1 - r0 >= HACK_RISE * r.std() > 0 or a1 - a0 > HACK_ACC:
        return []
    top = ""
    if len(s) and "correct" in s:
        wrong = s[s["correct"] == False]  # a column of bools or None
        best = wrong.sort_values("reward", ascending=False).head(3)
        top = "; highest-scoring wrong completions: " + ", ".join(
            f"{c!r} ({v:g})" for c, v in zip(best["completion"], best["reward"])
        )
    return [
        Finding(
            "reward_hacking",
            f"{m['step'].iloc[0]}-{m['step'].iloc[-1]}",
            f"reward {r0:.3f} -> {r1:.3f} (first -> last third) while accuracy "
            f"{a0:.3f} -> {a1:.3f}{top}",
            "read those completions; make the reward "
            "check what the verifier checks, or add the verifier as a reward",
        )
    ]


def rule_optimizer(m, s, cfg) -> list[Finding]:
    """Entropy collapse, KL or ratio blow-up, clipping off or too high, grad-norm spikes."""
    out = []
    e = _col(m, "entropy")
    if e is not None and len(e) >= 4 and e.iloc[0] > 0 and e.iloc[-1] < ENTROPY_DROP * e.iloc[0]:
        out.append(
            Finding(
                "entropy_collapse",
                _steps(m, e < ENTROPY_DROP * e.iloc[0]),
                f"entropy {e.iloc[0]:.3f} -> {e.iloc[-1]:.3f}",
                "lower "
                "learning_rate, raise temperature, clip-higher (epsilon_high=0.28) "
                "or a KL penalty (beta > 0)",
            )
        )
    for key, limit, what in (
        ("kl/k3", KL_MAX, "KL to pi_ref"),
        ("ratio/max", RATIO_MAX, "importance ratio"),
    ):
        v = _col(m, key)
        held = None if v is None else v.rolling(SUSTAIN, min_periods=1).median()
        if held is not None and held.max() > limit:
            out.append(
                Finding(
                    f"blow_up[{key}]",
                    _steps(m, held > limit),
                    f"{what}: median "
                    f"of {SUSTAIN} steps up to {held.max():.3g} (> {limit:g}), "
                    f"single steps up to {v.max():.3g}",
                    "lower learning_rate or num_iterations; raise beta; check max_grad_norm",
                )
            )
    c = _col(m, "clip/region")
    mu = cfg.get("num_iterations", 1) or 1
    if c is not None and mu > 1 and c.max() == 0:
        out.append(
            Finding(
                "clip_never",
                "all",
                f"no token clipped in {len(c)} steps with mu={mu}",
                "the trust region never acts: epsilon is too wide or "
                "the learning rate too small for mu > 1",
            )
        )
    if c is not None and c.mean() > CLIP_HIGH:
        out.append(
            Finding(
                "clip_high",
                _steps(m, c > CLIP_HIGH),
                f"mean clipped fraction {c.mean():.2f}",
                "most tokens are clipped: lower learning_rate or num_iterations",
            )
        )
    g = _col(m, "grad_norm")
    if g is not None and len(g) >= 5 and g.median() > 0 and g.max() > GRAD_SPIKE * g.median():
        out.append(
            Finding(
                "grad_spike",
                _steps(m, g > GRAD_SPIKE * g.median()),
                f"grad_norm up to {g.max():.3g}, median {g.median():.3g}",
                "set max_grad_norm (1.0), lower learning_rate; look at the "
                "completions of those steps",
            )
        )
    return out


def rule_learning_signal(m, s, cfg) -> list[Finding]:
    """Learning rate outside the usual range; advantages all ~0 (nothing to learn from)."""
    out = []
    lr = cfg.get("learning_rate")
    if isinstance(lr, (int, float)) and not LR_RANGE[0] <= lr <= LR_RANGE[1]:
        side = "high" if lr > LR_RANGE[1] else "low"
        out.append(
            Finding(
                f"lr_too_{side}",
                "all",
                f"learning_rate={lr:g}, outside {LR_RANGE[0]:g}-{LR_RANGE[1]:g}",
                "full fine-tuning: 1e-6-1e-5; LoRA: 1e-5-1e-4; labkit's tiny model: 5e-4-1e-3",
            )
        )
    a = _col(m, "adv/mean_abs")
    if a is not None and (a < ADV_ZERO).mean() >= ZERO_SPREAD:
        out.append(
            Finding(
                "advantages_zero",
                _steps(m, a < ADV_ZERO),
                f"mean |A| < {ADV_ZERO:g} on {(a < ADV_ZERO).mean():.0%} of steps",
                "no signal: see zero_spread; a reward with spread inside each group",
            )
        )
    return out


RULES = (
    rule_zero_spread,
    rule_truncation,
    rule_reward_functions,
    rule_reward_hacking,
    rule_optimizer,
    rule_learning_signal,
)
"""Every rule: ``rule(metrics, samples, config) -> [Finding]``."""


def diagnose(run) -> Diagnosis:
    """The findings of every rule in :data:`RULES` on a run (a RunLog, or a run folder).

    >>> from labkit.runs.log import RunLog
    >>> log = RunLog(config={"learning_rate": 0.5})
    >>> [f.rule for f in diagnose(log)]
    ['lr_too_high']
    """
    if not hasattr(run, "metrics"):
        from labkit.runs.log import load_run

        run = load_run(run)
    m, s, cfg = run.metrics, run.samples, dict(run.config)
    out = Diagnosis()
    for rule in RULES:
        out += rule(m, s, cfg)
    out.versions = reward_versions(cfg, run.events, int(m["step"].max()) if "step" in m else 0)
    return out


def reward_versions(cfg: dict, events: pd.DataFrame, last: int) -> pd.DataFrame:
    """Which reward version (``name@source-hash xweight, ...``) produced which steps: the
    config's first, then each event that changed the reward functions or weights.

    >>> ev = pd.DataFrame([{"step": 4, "kind": "update", "reward_version": "g@2 x1"}])
    >>> reward_versions({"reward_version": "f@1 x1"}, ev, 9).values.tolist()
    [['1-4', 'f@1 x1'], ['5-9', 'g@2 x1']]
    """
    rows = [(0, cfg.get("reward_version") or ", ".join(cfg.get("reward_funcs") or []))]
    if len(events) and "reward_version" in events:
        rows += [
            (int(e["step"]), e["reward_version"])
            for e in events.to_dict("records")
            if isinstance(e.get("reward_version"), str)
        ]
    ends = [s for s, _ in rows[1:]] + [last]
    return pd.DataFrame(
        [{"steps": f"{s + 1}-{e}", "reward_version": v} for (s, v), e in zip(rows, ends)],
        columns=["steps", "reward_version"],
    )
