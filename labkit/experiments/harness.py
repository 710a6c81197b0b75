"""One harness for every experiment: arms x seeds, run in parallel, judged against claims stated
before the run, stored as the one source of the numbers a lab, the README and a docstring quote.

An :class:`Experiment` names its arms (settings), its seeds, its step budget, the curves it
keeps and its :class:`~labkit.experiments.claims.Claim` records, and a ``train`` function that
runs ONE arm on ONE seed: ``train(arm, settings, seed=, steps=, fast=, run_name=, tick=)`` ->
:class:`Outcome` (the run's summary scalars and its metric curves). :meth:`Experiment.run`
sends every (arm, seed) to a worker process (:mod:`labkit.experiments.pool`), each run logged
as its own run folder ``runs/<experiment>/<arm>/seed-<k>/``, so every plot, ``compare_runs``,
the doctor and the completion browser read it as any run. A run that finished keeps its
``outcome.json`` there: running the experiment again (after a crash, a kill, a closed laptop)
redoes only what did not finish, and a run with checkpoints resumes from its last one
(:func:`resume_or_start`).

``labkit.experiments.results`` stores a :class:`Result` in the package and reads it back.
"""

from __future__ import annotations

import importlib
import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from labkit.experiments.claims import Claim, Verdict, judge
from labkit.experiments.pool import Job, run_jobs
from labkit.runs import checkpoint
from labkit.runs.log import runs_root

OUTCOME = "outcome.json"


@dataclass
class Outcome:
    """What one run of one arm on one seed leaves: its summary (scalars a claim can be judged
    on), its curves (the metrics the lab plots, one row per step) and ``seconds``, the wall
    time of the ``train`` call that finished it (set by :func:`run_arm`; a run resumed from a
    checkpoint counts from the resume; None in an ``outcome.json`` written before it was kept)."""

    summary: dict
    curves: pd.DataFrame
    seconds: float | None = None

    def to_json(self) -> str:
        curves = self.curves.to_dict("list")
        return json.dumps({"summary": self.summary, "curves": curves, "seconds": self.seconds})

    @classmethod
    def from_json(cls, text: str) -> Outcome:
        d = json.loads(text)
        return cls(d["summary"], pd.DataFrame(d["curves"]), d.get("seconds"))


def slug(name: str) -> str:
    """A folder name for an arm: ``"+ clip-higher"`` -> ``"clip-higher"``.

    >>> slug("+ dynamic sampling, naive's samples")
    'dynamic-sampling-naive-s-samples'
    """
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


@dataclass
class Experiment:
    """Arms x seeds of one idea, and the claims the runs decide."""

    name: str
    """Its folder under ``runs/`` and its stored result's name."""
    arms: dict[str, dict]
    """Arm name -> the settings ``train`` applies (config overrides, usually)."""
    train: Callable
    """``train(arm, settings, *, seed, steps, fast, run_name, tick) -> Outcome``."""
    claims: tuple[Claim, ...] = ()
    steps: int = 60
    fast_steps: int = 4
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    fast_seeds: tuple[int, ...] = (0,)
    curves: tuple[str, ...] = ()
    """The metric columns kept in the stored result (what the lab draws)."""
    lab: str = ""
    live: dict = field(default_factory=dict)
    """The "run it yourself" configuration (``arms``, ``seeds``, ``steps``): about two minutes
    on a laptop CPU, enough to show the effect's direction on the stored seeds."""

    def jobs(self, arms, seeds, steps: int, fast: bool, root: str) -> list[Job]:
        """One :class:`~labkit.experiments.pool.Job` per (arm, seed), seeds outermost so the
        first results cover every arm."""
        module = self.train.__module__
        return [
            Job(
                run_arm,
                {
                    "module": module,
                    "arm": arm,
                    "seed": s,
                    "steps": steps,
                    "fast": fast,
                    "run_name": f"{root}/{slug(arm)}/seed-{s}",
                },
                label=f"{self.name}: {arm}, seed {s}",
                steps=steps,
            )
            for s in seeds
            for arm in arms
        ]

    def run(
        self,
        fast: bool = False,
        arms=None,
        seeds=None,
        steps: int | None = None,
        workers: int | None = None,
        progress: bool = True,
        on_tick: Callable[[], None] | None = None,
        root: str | None = None,
    ) -> Result:
        """Every arm on every seed (default: all of them, full length; ``fast``: the fast
        seeds and steps); runs that finished before are read back, not redone."""
        arms = list(arms or self.arms)
        unknown = [a for a in arms if a not in self.arms]
        if unknown:
            raise ValueError(f"arms {unknown} are not arms of {self.name}: use {list(self.arms)}")
        seeds = tuple(seeds if seeds is not None else (self.fast_seeds if fast else self.seeds))
        steps = steps or (self.fast_steps if fast else self.steps)
        root = root or self.name + ("-fast" if fast else "")
        t0 = time.perf_counter()
        jobs = self.jobs(arms, seeds, steps, fast, root)
        done = {i: finished(j.kwargs["run_name"]) for i, j in enumerate(jobs)}
        todo = [j for i, j in enumerate(jobs) if done[i] is None]  # the rest is read back
        fresh = iter(run_jobs(todo, workers, progress, desc=self.name, on_tick=on_tick))
        outcomes = [done[i] if done[i] is not None else next(fresh) for i in range(len(jobs))]
        result = collect(self, jobs, outcomes)
        result.meta.update(
            {
                "arms": arms,
                "seeds": list(seeds),
                "steps": steps,
                "fast": fast,
                "wall_s": round(time.perf_counter() - t0, 1),  # this call's, read-backs included
                **run_seconds(outcomes, read_back=len(jobs) - len(todo)),
                "runs": str(runs_root() / root),
            }
        )
        return result

    def live_config(self, fast: bool = False, full: bool = False) -> dict:
        """What a lab's "run it yourself" cell runs: the ``live`` arms, seeds and steps (about
        two minutes on a laptop CPU); ``full``: every arm and seed, the stored result's, in the
        same run folders as ``scripts/run_experiment.py`` (what finished there is read back);
        ``fast``: the live arms on the fast seeds and steps (CI)."""
        if full:
            return {
                "arms": list(self.arms),
                "seeds": self.seeds,
                "steps": self.steps,
                "root": self.name,
            }
        arms = self.live.get("arms", list(self.arms))
        if fast:
            return {
                "arms": arms,
                "seeds": self.fast_seeds,
                "steps": self.fast_steps,
                "fast": True,
                "root": f"{self.name}-fast",
            }
        seeds, steps = self.live.get("seeds", self.fast_seeds), self.live.get("steps", self.steps)
        return {"arms": arms, "seeds": seeds, "steps": steps, "root": f"{self.name}-live"}

    def partial_curves(self, root: str, arms, seeds) -> pd.DataFrame:
        """The kept curves of the runs under ``runs/<root>/`` so far (a live figure's data)."""
        frames = []
        for arm in arms:
            for s in seeds:
                path = runs_root() / root / slug(arm) / f"seed-{s}" / "metrics.jsonl"
                rows = _read_jsonl(path)
                if rows:
                    m = pd.DataFrame(rows)
                    keep = ["step", *(c for c in self.curves if c in m)]
                    frames.append(m[keep].assign(arm=arm, seed=s))
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _read_jsonl(path) -> list[dict]:
    """The complete lines of a JSONL file being written (none if it does not exist yet)."""
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:  # the line being written
            pass
    return rows


def experiment_of(module: str) -> Experiment:
    """The ``EXPERIMENT`` of a module (``labkit.experiments.dapo``)."""
    return importlib.import_module(module).EXPERIMENT


def run_seconds(outcomes: list[Outcome], read_back: int) -> dict:
    """A result's meta on its runs' own time, beside ``wall_s`` (the wall time of the call that
    collected them, which is a read-back's when every run finished in an earlier call):
    ``runs_s``, the sum of the runs' own seconds (one thread each: the experiment's compute,
    whatever the workers), None when a run read back has no time recorded; ``runs_read_back``,
    how many runs the call read back from disk instead of running.

    >>> curves = pd.DataFrame({"step": [1]})
    >>> run_seconds([Outcome({}, curves, 60.0), Outcome({}, curves, 30.5)], read_back=2)
    {'runs_s': 90.5, 'runs_read_back': 2}
    >>> run_seconds([Outcome({}, curves, 60.0), Outcome({}, curves)], read_back=1)
    {'runs_s': None, 'runs_read_back': 1}
    """
    times = [o.seconds for o in outcomes]
    total = None if None in times else round(sum(times), 1)
    return {"runs_s": total, "runs_read_back": read_back}


def finished(run_name: str) -> Outcome | None:
    """The outcome of a run that finished (``outcome.json`` beside its log), else None."""
    done = runs_root() / run_name / OUTCOME
    return Outcome.from_json(done.read_text()) if done.exists() else None


def run_arm(module: str, arm: str, seed: int, steps: int, fast: bool, run_name: str, tick):
    """One (arm, seed) run of ``module``'s experiment; its outcome is written beside its log
    (whole or not at all), so a finished run is never redone."""
    exp = experiment_of(module)
    done = runs_root() / run_name / OUTCOME
    t0 = time.perf_counter()
    out = exp.train(
        arm, exp.arms[arm], seed=seed, steps=steps, fast=fast, run_name=run_name, tick=tick
    )
    seconds = round(time.perf_counter() - t0, 1)
    keep = ["step", *(c for c in exp.curves if c in out.curves)]
    out = Outcome(out.summary, out.curves[keep].reset_index(drop=True), seconds)
    done.parent.mkdir(parents=True, exist_ok=True)
    tmp = done.with_name(OUTCOME + ".tmp")
    tmp.write_text(out.to_json())
    tmp.replace(done)  # whole or absent: a kill never leaves half an outcome
    return out


def resume_or_start(cls, run_name: str, steps: int, tick, until=None, **kwargs):
    """A trainer of ``cls`` for ``run_name`` trained to ``steps`` steps (or until
    ``until(trainer)`` is true after a step): resumed from its last checkpoint when it has one
    (the arguments passed again: reward functions, task), else new. ``tick(done, steps)``
    after every step."""
    run_dir = runs_root() / run_name
    if checkpoint.steps(run_dir):
        passed = {k: kwargs[k] for k in ("reward_funcs", "task") if k in kwargs}
        trainer = cls.from_run(run_dir, model=kwargs.get("model"), **passed)
    else:
        trainer = cls(run_name=run_name, **kwargs)

    def after_step(t, m) -> None:
        tick(t.global_step, steps)
        if until is not None and until(t):
            t.stop()

    if until is None or trainer.global_step == 0 or not until(trainer):
        trainer.train(max_steps=steps - trainer.global_step, progress=False, callback=after_step)
    tick(steps, steps)
    return trainer


@dataclass
class Result:
    """An experiment's runs: ``summaries`` (arm, seed, one column per summary scalar),
    ``curves`` (arm, seed, step, the kept metrics), ``meta`` (how, when and where it ran)
    and the claims it was run to decide."""

    name: str
    summaries: pd.DataFrame
    curves: pd.DataFrame
    claims: list[Claim]
    meta: dict = field(default_factory=dict)

    def verdicts(self) -> list[Verdict]:
        """Each claim whose arms were run, judged on the summaries."""
        ran = set(self.summaries["arm"]) if len(self.summaries) else set()
        return [
            judge(c, self.summaries)
            for c in self.claims
            if c.arm in ran and (c.baseline is None or c.baseline in ran)
        ]

    def claims_table(self) -> pd.DataFrame:
        """One row per claim: the paired effect, its 95 % CI, seeds, the rule, the verdict."""
        return pd.DataFrame([v.row() for v in self.verdicts()])

    def table(self, columns=None) -> pd.DataFrame:
        """Per arm, each summary column's mean over seeds (arms in the experiment's order)."""
        s = self.summaries
        cols = list(columns or [c for c in s.columns if c not in ("arm", "seed")])
        order = list(dict.fromkeys(s["arm"]))
        return s.groupby("arm", sort=False)[cols].mean().loc[order]


def collect(exp: Experiment, jobs: list[Job], outcomes: list[Outcome]) -> Result:
    """The outcomes of ``jobs`` as one :class:`Result`."""
    rows, curves = [], []
    for job, out in zip(jobs, outcomes):
        arm, seed = job.kwargs["arm"], job.kwargs["seed"]
        rows.append({"arm": arm, "seed": seed, **out.summary})
        curves.append(out.curves.assign(arm=arm, seed=seed))
    c = pd.concat(curves, ignore_index=True) if curves else pd.DataFrame()
    c = c[["arm", "seed", *(x for x in c.columns if x not in ("arm", "seed"))]]
    return Result(exp.name, pd.DataFrame(rows), c, list(exp.claims), {})
