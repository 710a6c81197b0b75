"""A paper's claim, the rule that decides it (stated before the run), and its verdict over seeds.

A :class:`Claim` names the metric it is judged on (a column of each run's summary), the arm that
should move it and the arm it is compared with, and the paper's direction. Arms share seeds, so
the effect is a paired difference, one per seed: d_s = m(arm, s) - m(baseline, s) (without a
baseline, the arm's own metric, e.g. a change within the run). Its mean and 95 % confidence
interval are Student's t over the seeds (``scipy.stats.ttest_1samp``), the interval Agarwal et
al. 2021 ("Deep RL at the Edge of the Statistical Precipice", 2108.13264) ask for in place of a
point estimate; with few seeds a bootstrap interval is too narrow, t's is honest about it.

The verdict (:func:`judge`), for a directional claim:
  "reproduced"      the interval excludes 0 on the paper's side;
  "not reproduced"  it excludes 0 on the other side, or excludes the paper's effect size
                    (``effect``, when the claim gives one);
  "inconclusive"    otherwise.
For an equivalence claim ("A ~ B", ``margin`` m): reproduced when the interval lies inside
(-m, m), not reproduced when it lies outside it, inconclusive otherwise.

>>> c = Claim("c", "B beats A", "a paper", metric="acc", arm="B", baseline="A")
>>> s = pd.DataFrame({"arm": ["A"] * 5 + ["B"] * 5, "seed": list(range(5)) * 2,
...                   "acc": [0.40, 0.50, 0.45, 0.42, 0.48, 0.52, 0.61, 0.55, 0.50, 0.60]})
>>> v = judge(c, s)
>>> v.verdict, v.n, round(v.mean, 3), round(v.low, 3) > 0
('reproduced', 5, 0.106, True)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import pandas as pd
from scipy import stats

VERDICTS = ("reproduced", "not reproduced", "inconclusive")


@dataclass(frozen=True)
class Claim:
    """What a paper says, and how a run over seeds decides it."""

    key: str
    """Short id, unique within its experiment."""
    text: str
    """The claim in a sentence, as the paper makes it."""
    source: str
    """The paper (authors, year, arXiv id, section)."""
    metric: str
    """The summary column judged (one value per run)."""
    arm: str
    """The arm the claim is about."""
    baseline: str | None = None
    """The arm it is compared with on the same seeds; None: the arm's metric itself."""
    direction: int = 1
    """+1: the paper says arm - baseline > 0; -1: < 0; 0: an equivalence claim (``margin``)."""
    effect: float | None = None
    """The smallest effect the paper implies, in the metric's units (with the direction's
    sign dropped); an interval below it is "not reproduced". None: the sign alone decides."""
    margin: float | None = None
    """Equivalence claims: |difference| below this counts as the same."""
    note: str = ""
    """What the toy cannot show, or how the metric stands in for the paper's."""

    def __post_init__(self):
        if self.direction not in (-1, 0, 1):
            raise ValueError(f"direction={self.direction}: use +1, -1 or 0 (equivalence)")
        if self.direction == 0 and not self.margin:
            raise ValueError(f"claim {self.key!r}: an equivalence claim needs margin > 0")

    @property
    def rule(self) -> str:
        """The verdict rule in words (the claims table prints it)."""
        diff = (
            self.metric if self.baseline is None else f"{self.metric}: {self.arm} - {self.baseline}"
        )
        if self.direction == 0:
            return f"{diff}: 95 % CI inside ±{self.margin:g}"
        side = "> 0" if self.direction > 0 else "< 0"
        extra = f", not below {self.effect:g} in size" if self.effect is not None else ""
        return f"{diff} {side} (95 % CI excludes 0{extra})"

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Verdict:
    """A claim judged: the paired differences, their mean and 95 % CI, and the verdict."""

    claim: Claim
    values: list[float]
    mean: float
    low: float
    high: float
    verdict: str

    @property
    def n(self) -> int:
        return len(self.values)

    def row(self) -> dict:
        """One row of a claims table."""
        return {
            "claim": self.claim.text,
            "metric": self.claim.metric,
            "arm": self.claim.arm,
            "baseline": self.claim.baseline,
            "seeds": self.n,
            "effect": self.mean,
            "ci_low": self.low,
            "ci_high": self.high,
            "rule": self.claim.rule,
            "verdict": self.verdict,
        }


def paired(claim: Claim, summaries: pd.DataFrame) -> pd.Series:
    """d_s per seed present in both arms (``summaries``: columns arm, seed, metrics)."""
    by = summaries.set_index(["arm", "seed"])[claim.metric]
    d = by.loc[claim.arm]
    if claim.baseline is not None:
        d = d - by.loc[claim.baseline]
    return d.dropna().sort_index()


def interval(values) -> tuple[float, float, float]:
    """(mean, low, high): the mean and its 95 % Student-t confidence interval.

    >>> [round(x, 3) for x in interval([1.0, 2.0, 3.0])]
    [2.0, -0.484, 4.484]
    """
    values = [float(v) for v in values]
    if not values:
        return math.nan, math.nan, math.nan
    mean = sum(values) / len(values)
    if len(values) < 2 or max(values) == min(values):  # no spread: t's interval is undefined
        return (
            mean,
            (mean if len(values) > 1 else -math.inf),
            (mean if len(values) > 1 else math.inf),
        )
    ci = stats.ttest_1samp(values, 0.0).confidence_interval(0.95)
    return mean, float(ci.low), float(ci.high)


def decide(claim: Claim, low: float, high: float) -> str:
    """The verdict of an interval [low, high] under ``claim``'s rule (module docstring)."""
    if claim.direction == 0:
        if -claim.margin < low and high < claim.margin:
            return "reproduced"
        return "not reproduced" if high <= -claim.margin or low >= claim.margin else "inconclusive"
    lo, hi = (low, high) if claim.direction > 0 else (-high, -low)  # the paper's side positive
    if lo > 0 and (claim.effect is None or hi >= claim.effect):
        return "reproduced"
    if hi < 0 or (claim.effect is not None and hi < claim.effect):
        return "not reproduced"
    return "inconclusive"


def judge(claim: Claim, summaries: pd.DataFrame) -> Verdict:
    """``claim`` decided on ``summaries`` (one row per arm and seed)."""
    d = paired(claim, summaries)
    mean, low, high = interval(d.tolist())
    verdict = decide(claim, low, high) if len(d) >= 2 else "inconclusive"
    return Verdict(claim, d.tolist(), mean, low, high, verdict)
