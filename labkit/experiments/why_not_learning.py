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

Each arm runs on every seed of :data:`EXPERIMENT` (``labkit.experiments.harness``); a run is
summarised by its training accuracy in the first and last third of its steps, its zero-spread
groups, truncation and gradient norm, and what the doctor said about it.

Departures, and why: the toy's "healthy" run is the labs' base configuration (``BASE_RUN``,
``digit_partial``); the faults are built in (a reward that can never fire, a length of 1 token),
so "does not learn" is exact (grad_norm 0 for the format run), not a statistical claim.
"""

from __future__ import annotations

import pandas as pd

from labkit.algos.config import BASE_RUN as BASE
from labkit.experiments.arms import grpo_run
from labkit.experiments.claims import Claim
from labkit.experiments.harness import Experiment, Outcome
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


def answer_format(completions, answer, **kwargs):
    """1.0 when the completion is ``<answer>N</answer>`` with the right N (a format reward the
    cold-started tiny model never matches: it writes bare digits)."""
    return [float(c.strip() == f"<answer>{a}</answer>") for c, a in zip(completions, answer)]


ARMS = {
    "healthy": {},
    "format never matched": {"reward_funcs": [answer_format]},
    "truncated": {"max_completion_length": 1},
}
"""Arm -> what it changes in the labs' base run."""
CURVES = ("accuracy", "adv/frac_zero_std", "grad_norm", "len/truncated_frac")
SOURCE = "GRPO (Shao et al. 2024, 2402.03300) eq. 3; DAPO (Yu et al. 2025, 2503.14476) sec. 3.2"
DOCTOR = "labkit's run doctor (labkit.runs.diagnose), rules after DAPO (2503.14476) sec. 3.2, 3.4"


def train(arm: str, settings: dict, *, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One arm on one seed: the labs' base run with the arm's change, read by the doctor."""
    base = {k: v for k, v in BASE.items() if k != "max_steps"}
    trainer = grpo_run(
        "tiny",
        settings,
        seed=seed,
        steps=steps,
        run_name=run_name,
        tick=tick,
        track_kl=False,
        **base,
    )
    out = Outcome(summary(trainer.log, EXPECTED[arm]), trainer.log.metrics)
    # answer_format is not a built-in reward, so it ran in forked reward workers: stop them
    # now, or a harness worker process that exits waits on them forever
    trainer.scorer.close()
    return out


def summary(log, expected: set[str]) -> dict:
    """Training accuracy in the first and last third of the steps and its gain, the mean
    zero-spread fraction, truncation and gradient norm, and the doctor's reading: how many
    rules fired, and whether it missed one that ``expected`` names (1.0: missed)."""
    m = log.metrics
    k = max(1, len(m) // 3)
    first, last = m["accuracy"].iloc[:k].mean(), m["accuracy"].iloc[-k:].mean()
    found = {f.rule for f in diagnose(log)}
    return {
        "accuracy, first third": float(first),
        "accuracy, last third": float(last),
        "accuracy gain": float(last - first),
        "zero-spread groups": float(m["adv/frac_zero_std"].mean()),
        "truncated": float(m["len/truncated_frac"].mean()),
        "grad_norm": float(m["grad_norm"].mean()),
        "doctor warnings": len(found),
        "doctor misses the fault": float(bool(expected - found)),
    }


def _stalls(arm: str, key: str) -> Claim:
    return Claim(
        key,
        f"{arm}: every group has zero spread, so the run learns less than the healthy one",
        SOURCE,
        metric="accuracy gain",
        arm=arm,
        baseline="healthy",
        direction=-1,
    )


def _named(arm: str, key: str) -> Claim:
    return Claim(
        key,
        f"the run doctor names the fault of the {arm!r} run from its log",
        DOCTOR,
        metric="doctor misses the fault",
        arm=arm,
        direction=0,
        margin=0.5,
        note="an equivalence with 0: reproduced when the doctor names it on (nearly) every seed",
    )


EXPERIMENT = Experiment(
    name="why_not_learning",
    lab="45_why_isnt_it_learning",
    arms=ARMS,
    train=train,
    steps=150,
    fast_steps=8,
    curves=CURVES,
    claims=(
        Claim(
            "no-gradient",
            "groups whose rewards all agree give no gradient: a never-matched format reward "
            "leaves the gradient norm at 0",
            SOURCE,
            metric="grad_norm",
            arm="format never matched",
            baseline="healthy",
            direction=-1,
        ),
        _stalls("format never matched", "format-stalls"),
        _stalls("truncated", "truncation-stalls"),
        Claim(
            "healthy-learns",
            "the healthy run learns: training accuracy rises from the first third to the last",
            "GRPO (Shao et al. 2024, 2402.03300)",
            metric="accuracy gain",
            arm="healthy",
        ),
        _named("format never matched", "doctor-format"),
        _named("truncated", "doctor-truncation"),
        Claim(
            "doctor-quiet",
            "the run doctor gives the healthy run no warning",
            DOCTOR,
            metric="doctor warnings",
            arm="healthy",
            direction=0,
            margin=0.5,
            note="an equivalence with 0: reproduced when no rule fires on (nearly) every seed",
        ),
    ),
    live={"arms": list(ARMS), "seeds": (0, 1), "steps": 60},
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
