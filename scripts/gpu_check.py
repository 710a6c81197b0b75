"""The GPU check's driver (README, "GPU check"); scripts/gpu_check.sh installs the carried wheels
and starts it. Phases, each in its own process under its own time limit, inside one budget:

- ``env``: versions, where each package was imported from, the GPU (scripts/gpu_check_env.py);
- ``tests``: ``pytest -m gpu`` over the test files that mark tests ``gpu``, each test's outcome
  and figures as it ends (scripts/gpu_check_plugin.py);
- ``benchmark``: labkit vs TRL GRPO steps (benchmarks/gpu_step_vs_trl.py);
- ``lab51``: lab 51's GPU branch for a few steps (scripts/gpu_check_lab51.py).

Every figure goes to ``$OUT/gpu_check.json``, rewritten when a phase starts, every few seconds
while it runs and when it ends, so a run cut off still returns what ran; each phase's output goes
to ``$OUT/gpu_check.log``. ``--mode cpu``: the same phases on a CPU at tiny sizes, what needs
CUDA skipped and said so (a dry run of the script, tests/test_gpu_check.py). This file imports
no torch: a phase that hangs in CUDA cannot take the driver with it.
"""

from __future__ import annotations

import argparse
import datetime
import importlib.util
import json
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUDGET = {"gpu": 470, "cpu": 480}  # seconds for everything, the install included
LIMITS = {  # seconds at most per phase: (gpu, cpu); a shared 2-core CPU can be 3x slow
    "env": (40, 60),
    "tests": (150, 120),  # an H200, 2026-11-27: 96 s
    "benchmark": (190, 180),  # an H200: SmolLM2 steps of 6.5 s, 8 per trainer; 110 s cut it off
    "lab51": (120, 120),
}
REFRESH_S = 5


def gpu_test_files() -> list[str]:
    """The test files that mark tests ``gpu`` (a whole module or single tests)."""
    found = [p for p in sorted((ROOT / "tests").glob("test_*.py")) if "mark.gpu" in p.read_text()]
    return [str(p.relative_to(ROOT)) for p in found]


def commands(mode: str, out: pathlib.Path) -> dict[str, list[str]]:
    py, cpu = sys.executable, ["--cpu"] if mode == "cpu" else []
    timeout = ["--timeout=150"] if importlib.util.find_spec("pytest_timeout") else []
    tests = [py, "-m", "pytest", "-m", "gpu", "-p", "gpu_check_plugin", "-q", "-rA", *timeout]
    if os.environ.get("GPU_CHECK_TESTS_K"):  # a rerun of some tests only: a pytest -k expression
        tests += ["-k", os.environ["GPU_CHECK_TESTS_K"]]
    return {
        "env": [py, "scripts/gpu_check_env.py", "--json", str(out / "env.json")],
        "tests": tests + gpu_test_files(),
        "benchmark": [py, "benchmarks/gpu_step_vs_trl.py", "--json", str(out / "benchmark.jsonl")]
        + cpu,
        "lab51": [py, "scripts/gpu_check_lab51.py", "--json", str(out / "lab51.jsonl")] + cpu,
    }


def read_jsonl(path: pathlib.Path) -> list[dict]:
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:  # a line cut off by a kill
            pass
    return rows


class Results:
    """``$OUT/gpu_check.json``: the run's header, each phase's status and what it wrote."""

    def __init__(self, out: pathlib.Path, mode: str, install: str, started: float):
        self.out, self.path = out, out / "gpu_check.json"
        self.data = {
            "mode": mode,
            "started_utc": datetime.datetime.fromtimestamp(started, datetime.UTC).isoformat(),
            "budget_s": BUDGET[mode],
            "install": install,
            "phases": {},
        }

    def phase(self, name: str, **fields) -> None:
        self.data["phases"].setdefault(name, {}).update(fields)
        self.write()

    def write(self) -> None:
        d = self.data
        env = read_jsonl(self.out / "env.json")  # one line, written at the phase's end
        d["env"] = env[0] if env else None
        tests = read_jsonl(self.out / "tests.jsonl")
        counts = {}
        for t in tests:
            counts[t["outcome"]] = counts.get(t["outcome"], 0) + 1
        d["tests"] = {"counts": counts, "rows": tests}
        d["benchmark"] = read_jsonl(self.out / "benchmark.jsonl")
        d["lab51"] = read_jsonl(self.out / "lab51.jsonl")
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(d, indent=1, default=str))
        tmp.replace(self.path)  # a reader never sees half a file


def run_phase(cmd: list[str], limit: float, log, results: Results) -> dict:
    """Run ``cmd`` (its output into ``log`` and to stdout) for at most ``limit`` seconds,
    rewriting the results every few seconds; at the limit its whole process group is killed."""
    t0 = time.time()
    env = {**os.environ, "GPU_CHECK_TESTS": str(results.out / "tests.jsonl")}
    env["PYTHONUNBUFFERED"] = "1"
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    pump = threading.Thread(target=_copy, args=(proc.stdout, log), daemon=True)
    pump.start()
    timed_out = False
    while proc.poll() is None:
        left = limit - (time.time() - t0)
        if left <= 0:
            os.killpg(proc.pid, signal.SIGKILL)  # the phase's own group: it and its children
            timed_out = True
        try:
            proc.wait(timeout=max(0.1, min(REFRESH_S, left)))
        except subprocess.TimeoutExpired:
            results.write()
    pump.join(timeout=5)
    status = "timeout" if timed_out else ("ok" if proc.returncode == 0 else "failed")
    return {"status": status, "returncode": proc.returncode, "seconds": round(time.time() - t0, 1)}


def _copy(stream, log) -> None:
    for raw in iter(stream.readline, b""):
        line = raw.decode(errors="replace")
        log.write(line)
        log.flush()
        sys.stdout.write(line)
        sys.stdout.flush()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=["gpu", "cpu"], default="gpu")
    ap.add_argument("--out", type=pathlib.Path, required=True)
    ap.add_argument("--started", type=float, default=time.time(), help="epoch seconds")
    ap.add_argument("--install", default="not run", help="what the install step said")
    ap.add_argument("--only", default="", help="phases to run, comma-separated (default: all)")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for stale in ("tests.jsonl", "benchmark.jsonl", "lab51.jsonl", "env.json"):
        (args.out / stale).unlink(missing_ok=True)
    results = Results(args.out, args.mode, args.install, args.started)
    deadline = args.started + BUDGET[args.mode]
    wanted = [p for p in LIMITS if not args.only or p in args.only.split(",")]
    col = 0 if args.mode == "gpu" else 1
    with open(args.out / "gpu_check.log", "a") as log:
        for name, cmd in commands(args.mode, args.out).items():
            if name not in wanted:
                continue
            limit = min(LIMITS[name][col], deadline - time.time())
            if limit < 5:
                results.phase(name, status="not run: the budget is spent")
                continue
            log.write(f"\n===== {name}: {' '.join(cmd)} (at most {limit:.0f} s)\n")
            results.phase(name, status="running", limit_s=round(limit))
            results.phase(name, **run_phase(cmd, limit, log, results))
    results.data["wall_s"] = round(time.time() - args.started, 1)
    results.write()
    bad = {n: p["status"] for n, p in results.data["phases"].items() if p["status"] != "ok"}
    print(f"gpu_check ({args.mode}): {results.data['wall_s']} s; results in {results.path}")
    print("phases not ok: " + (json.dumps(bad) if bad else "none"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
