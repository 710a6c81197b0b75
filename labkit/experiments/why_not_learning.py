"""Why isn't it learning? Three GRPO runs from the same start, two with a classic fault, and the
run doctor reading their logs.

Group advantages (GRPO, Shao et al. 2024, arXiv 2402.03300, eq. 3):
    A_i = (r_i - mean(r_1..r_G)) / std(r_1..r_G)
are all 0 in a group whose G rewards are equal, so that group gives no gradient; DAPO (Yu et al.
2025, arXiv 2503.14476, sec. 3.2) samples past such groups ("dynamic sampling") for this reason.
Two ways a prototyped reward lands there: a format the model never writes (the answer must sit
in ``<answer>`` tags the cold-started model does not produce), and completions cut before the
answer ends (``max_completion_length`` too small). The doctor (``labkit.runs.diagnose``) should
name each from the log alone, and say nothing about the healthy run.

Departures, and why: the toy's "healthy" run is the labs' base config (``BASE_RUN``) (``digit_partial``); the faults
are built in (a reward that can never fire, a length of 1 token), so "does not learn" is exact
(grad_norm 0), not a statistical claim.
"""

from __future__ import annotations

import pandas as pd

from labkit.algos.config import BASE_RUN as BASE
from labkit.algos.grpo import GRPOTrainer
from labkit.rewards.code import run_code
from labkit.runs.diagnose import diagnose

CLAIM = (
    "A group whose G rewards are all equal has A_i = (r_i - mean r) / std r = 0 for every "
    "completion and gives no gradient (GRPO, arXiv 2402.03300, eq. 3; DAPO, arXiv 2503.14476, "
    "sec. 3.2, dynamic sampling). A reward whose format is never matched, or completions cut "
    "before the answer, put every group there: the run does not learn, and the run doctor "
    "names the cause from the run log alone, while the healthy run gets no warning."
)
EXPECTED = {
    "healthy": set(),
    "format never matched": {"format_never_matched[answer_format]"},
    "truncated": {"truncation"},
}
"""The doctor's rules each run must get (healthy: none)."""
ZERO = 0.95
"""Fraction of zero-spread groups that counts as "no signal" (a 1-token run still sees the odd
one-digit sum, e.g. 3+4=7, so a few groups keep a spread)."""


def answer_format(completions, answer, **kwargs):
    """1.0 when the completion is ``<answer>N</answer>`` with the right N (a format reward the
    cold-started tiny model never matches: it writes bare digits)."""
    return [float(c.strip() == f"<answer>{a}</answer>") for c, a in zip(completions, answer)]


RUNS = {
    "healthy": {},
    "format never matched": {"reward_funcs": [answer_format]},
    "truncated": {"max_completion_length": 1},
}


def run(fast: bool = False, seed: int = 0, steps: int | None = None) -> dict:
    """The three runs (``why-<name>`` under the runs folder) and the doctor on each."""
    steps = steps or (8 if fast else 150)
    logs, found = {}, {}
    for name, change in RUNS.items():
        cfg = {**BASE, "max_steps": steps, "seed": seed, **change}
        tr = GRPOTrainer(
            reward_funcs=cfg.pop("reward_funcs"),
            track_kl=False,
            run_name=f"why-{name.replace(' ', '-')}",
            **cfg,
        )
        tr.train(progress=False)
        logs[name], found[name] = tr.log, diagnose(tr.log)
    return {"runs": logs, "diagnoses": found, "steps": steps}


def results(res: dict) -> pd.DataFrame:
    """Per run: accuracy in the first and last third, zero-spread groups, truncation, mean
    grad norm, and the doctor's rules."""
    rows = []
    for name, log in res["runs"].items():
        m = log.metrics
        k = max(1, len(m) // 3)
        rows.append(
            {
                "run": name,
                "acc first third": m["accuracy"].iloc[:k].mean(),
                "acc last third": m["accuracy"].iloc[-k:].mean(),
                "zero-spread groups": m["adv/frac_zero_std"].mean(),
                "truncated": m["len/truncated_frac"].mean(),
                "grad_norm": m["grad_norm"].mean(),
                "doctor": ", ".join(f.rule for f in res["diagnoses"][name]) or "-",
            }
        )
    return pd.DataFrame(rows)


def verdict(res: dict) -> str:
    """'reproduced' when the fault runs have (nearly) every group at zero spread and at most a
    tenth of the healthy run's gradient norm, the healthy run does not, the doctor names what
    ``EXPECTED`` says on each fault run and nothing on the healthy one."""
    t = results(res).set_index("run")
    named = {n: {f.rule for f in d} for n, d in res["diagnoses"].items()}
    missing = {n: EXPECTED[n] - named[n] for n in EXPECTED if EXPECTED[n] - named[n]}
    extra = named["healthy"]
    faults = [n for n in EXPECTED if n != "healthy"]
    g = t.loc["healthy", "grad_norm"]
    no_signal = all(
        t.loc[n, "zero-spread groups"] >= ZERO and t.loc[n, "grad_norm"] <= 0.1 * g for n in faults
    )
    healthy_signal = t.loc["healthy", "zero-spread groups"] < ZERO and g > 0
    if no_signal and healthy_signal and not missing and not extra:
        return (
            "reproduced: both faults leave (nearly) every group at zero spread and almost no "
            "gradient, "
            "the healthy run learns from its groups, and the doctor names each fault and "
            "gives the healthy run no warning"
        )
    return (
        f"not reproduced: no_signal={no_signal}, healthy_signal={healthy_signal}, "
        f"missed={missing}, false alarms on healthy={sorted(extra)}"
    )


MALICIOUS = {
    "correct code": ("def f():\n    return 1", "assert f() == 1"),
    "infinite loop": ("while True:\n    pass", ""),
    "fork bomb": ("import os\nwhile True:\n    os.fork()", ""),
    "huge allocation": ("x = bytearray(10**10)", ""),
    "write outside": ("open('/etc/labkit-escaped', 'w').write('x')", ""),
    "network": ("import socket\nsocket.create_connection(('1.1.1.1', 80), timeout=1)", ""),
}


def sandbox_report(cpu_seconds: int = 1, wall_seconds: float = 4.0) -> pd.DataFrame:
    """Each :data:`MALICIOUS` case through the code-execution sandbox: status, detail, time."""
    rows = []
    for name, (code, tests) in MALICIOUS.items():
        r = run_code(code, tests, cpu_seconds=cpu_seconds, wall_seconds=wall_seconds)
        rows.append(
            {"case": name, "status": r.status, "detail": r.detail, "seconds": round(r.seconds, 2)}
        )
    return pd.DataFrame(rows)
