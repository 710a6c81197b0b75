"""Regenerate, from the stored GPU check runs (``docs/gpu_check/<date>-<gpu>/``: what
``bash scripts/gpu_check.sh`` wrote under ``$OUT``, one folder per device call, and a
``manifest.json`` saying which commit and command made each), the README's "GPU check, measured"
section and ``docs/gpu_check/RESULTS.md`` (every test's figures); ``--check`` only reports what is
stale (tests/test_gpu_report.py runs it).

    python scripts/gpu_report.py [--check]

A later run of a test replaces an earlier one's row (a rerun of the failed tests after a fix);
each row names the run it comes from. A run's ``replaces`` ({old test: new test}) drops the
rows of a test its fix renamed.
"""

from __future__ import annotations

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # also when loaded by path
from _sync import sync

ROOT = pathlib.Path(__file__).resolve().parent.parent
STORE = ROOT / "docs" / "gpu_check"
README = ROOT / "README.md"
RESULTS = STORE / "RESULTS.md"
BEGIN, END = "<!-- gpu:begin -->", "<!-- gpu:end -->"


def read_jsonl(path: pathlib.Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def checks() -> list[dict]:
    """Each stored check (oldest first): its manifest, with each run's files read."""
    out = []
    for folder in sorted(p for p in STORE.iterdir() if (p / "manifest.json").exists()):
        m = json.loads((folder / "manifest.json").read_text())
        for run in m["runs"]:
            d = folder / run["name"]
            run["tests"] = read_jsonl(d / "tests.jsonl")
            run["benchmark"] = read_jsonl(d / "benchmark.jsonl")
            run["lab51"] = read_jsonl(d / "lab51.jsonl")
            env = d / "env.json"
            run["env"] = json.loads(env.read_text()) if env.exists() else None
        out.append({"folder": folder.name, **m})
    return out


def fmt(x) -> str:
    """A figure, briefly: 3 significant digits, lists and dicts element by element."""
    if isinstance(x, bool) or x is None:
        return str(x)
    if isinstance(x, float):
        return f"{x:.3g}"
    if isinstance(x, list):
        return "[" + ", ".join(fmt(v) for v in x) + "]"
    if isinstance(x, dict):
        return "; ".join(f"{k} {fmt(v)}" for k, v in x.items())
    return str(x)


def latest_tests(check: dict) -> dict[str, tuple[str, dict]]:
    """test id -> (run name, its row), the last run of each test winning."""
    rows = {}
    for run in check["runs"]:
        for old in run.get("replaces", {}):  # a test renamed by the fix this run checks
            rows = {t: v for t, v in rows.items() if t.split("[")[0] != old}
        for r in run["tests"]:
            rows[r["test"]] = (run["name"], r)
    return rows


def first_outcomes(check: dict) -> str:
    """Each run's counts: 'run1: 27 passed, 11 failed; run2: 11 passed'."""
    parts = []
    for run in check["runs"]:
        counts: dict[str, int] = {}
        for r in run["tests"]:
            counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
        if counts:
            parts.append(f"{run['name']}: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
    return "; ".join(parts)


def last(rows: list[dict], **match) -> dict | None:
    found = [r for r in rows if all(r.get(k) == v for k, v in match.items())]
    return found[-1] if found else None


def benchmark_rows(check: dict) -> list[str]:
    """labkit vs TRL per policy, each from the last run that timed both."""
    lines = [
        (
            "| policy | shape (P x G x tokens) | labkit s/step | TRL s/step | labkit / TRL | "
            "peak GB labkit / TRL | run |"
        ),
        "|---|---|---|---|---|---|---|",
    ]
    for run in reversed(check["runs"]):
        for policy in dict.fromkeys(r["policy"] for r in run["benchmark"]):
            if any(f"| {policy} |" in line for line in lines):
                continue
            mine = last(run["benchmark"], policy=policy, trainer="labkit")
            trl = last(run["benchmark"], policy=policy, trainer="TRL")
            if not (mine and trl):
                continue
            s = mine["shape"]
            lines.append(
                f"| {policy} | {s['prompts']} x {s['generations']} x {s['max_tokens']} | "
                f"{mine['step_s']:.3f} | {trl['step_s']:.3f} | {mine['step_s'] / trl['step_s']:.2f} | "
                f"{mine['peak_gb']:.2f} / {trl['peak_gb']:.2f} | {run['name']} |"
            )
    return lines


def lab51_line(check: dict) -> str:
    for run in reversed(check["runs"]):
        done = [r for r in run["lab51"] if r.get("steps_done")]
        if done:
            r = done[-1]
            return (
                f"lab 51's GPU preset ({r['preset']}: {r['architecture']} with {r['weights']} "
                f"weights, B = {r['B']}, {r['max_completion_length']}-token completions, "
                f"{r['precision']}, gradient checkpointing {r['gradient_checkpointing']}) ran "
                f"{r['steps_done']} steps: peak {r['peak_gb']:.1f} GB against the preset table's "
                f"estimate of {r['est_gb_preset_table']} GB, {r['s_per_step']:.1f} s a step after "
                f"the first ({r['step_times'][0]:.0f} s), {r['generated_tokens_per_s']:.0f} "
                f"generated tokens/s ({run['name']})"
            )
    return "lab 51's GPU preset: no step finished"


def env_line(check: dict) -> str:
    env = next((r["env"] for r in check["runs"] if r["env"]), None)
    if not env:
        return ""
    dev, pk = env["device"], env["packages"]
    return (
        f"{dev['name']} ({dev['memory_gib']} GiB, capability {dev['capability'][0]}."
        f"{dev['capability'][1]}), torch {pk['torch']['version']} + CUDA {dev['torch_cuda']}, "
        f"transformers {pk['transformers']['version']}, trl {pk['trl']['version']}; labkit picks "
        f"{dev['labkit_precision']}"
    )


def short(test: str) -> str:
    return test.split("::", 1)[1]


def readme_section(check: dict) -> str:
    rows = latest_tests(check)
    figs = {short(t): r["figures"] for t, (_, r) in rows.items()}
    learn = {k.split("[")[1][:-1]: v for k, v in figs.items() if k.startswith("test_grpo_learns")}
    mismatch = next((v for k, v in figs.items() if k.startswith("test_logprob_error")), {})
    ckpt = next((v for k, v in figs.items() if k.startswith("test_gradient_checkpointing")), {})
    mem = next((v for k, v in figs.items() if k.startswith("test_memory_estimate")), {})
    runs = ", ".join(f"{r['name']} at {r['commit']}" for r in check["runs"])
    lines = [
        (
            f"Measured on {env_line(check)}; {check['date']}, {runs} (`docs/gpu_check/"
            f"{check['folder']}/`, every test's figures in `docs/gpu_check/RESULTS.md`; this section "
            "is generated from them by `python scripts/gpu_report.py`)."
        ),
        "",
        (
            f"- **tests**: {first_outcomes(check)}; now failing: "
            f"{sum(r['outcome'] != 'passed' for _, r in rows.values())} of {len(rows)}."
        ),
    ]
    if learn:
        gains = "; ".join(f"{a} {fmt(v['heldout_gain_per_seed'])}" for a, v in learn.items())
        lines.append(
            f"- **GRPO learns on CUDA** (held-out gain per seed 0, 1, 2, 40 steps): {gains}."
        )
    if mismatch:
        parts = [
            f"{p}: |dlogp| vs fp32 {fmt(mismatch[p]['|dlogp| vs fp32'])}, TIS weights with an "
            f"fp32 trainer [{fmt(mismatch[p]['w min (fp32 trainer)'])}, "
            f"{fmt(mismatch[p]['w max (fp32 trainer)'])}]"
            for p in ("fp16", "bf16")
            if p in mismatch
        ]
        lines.append("- **sampler vs trainer on CUDA kernels**: " + "; ".join(parts) + ".")
    if ckpt:
        a, b = ckpt["peak_mib_without_with"]
        lines.append(
            f"- **gradient checkpointing** on CUDA: peak {a:.0f} -> {b:.0f} MiB, same gradients."
        )
    if mem:
        parts = [
            f"B = {r['B']}: peak {r['peak_gb']:.1f} GB, printed estimate {r['printed_est_gb']:.1f}"
            for r in mem["rows"]
        ]
        lines.append("- **memory estimate**, SmolLM2-135M + LoRA: " + "; ".join(parts) + ".")
    lines += [f"- **{lab51_line(check)}**.", "", *benchmark_rows(check)]
    return "\n".join(lines)


def results_md(all_checks: list[dict]) -> str:
    out = [
        "# GPU check results",
        "",
        (
            "Generated by `python scripts/gpu_report.py` from the runs stored beside this file. A "
            "later run of a test replaces an earlier one's row; the run column says which."
        ),
    ]
    for check in all_checks:
        out += ["", f"## {check['folder']}", "", check["device"], ""]
        for run in check["runs"]:
            status = ", ".join(f"{k} {v['status']}" for k, v in run["phases"].items())
            out.append(
                f"- {run['name']} at {run['commit']}: `{run['command']}` ({status}). {run['note']}."
            )
        out += ["", "| test | run | outcome | s | figures |", "|---|---|---|---|---|"]
        for test, (name, r) in latest_tests(check).items():
            figures = fmt(r["figures"]).replace("|", "\\|")
            out.append(
                f"| {short(test)} | {name} | {r['outcome']} | {r['seconds']:.1f} | {figures} |"
            )
        out += ["", *benchmark_rows(check), "", f"{lab51_line(check)}."]
    return "\n".join(out) + "\n"


def readme_text(all_checks: list[dict]) -> str:
    text = README.read_text()
    head, rest = text.split(BEGIN)
    _, tail = rest.split(END)
    return f"{head}{BEGIN}\n{readme_section(all_checks[-1])}\n{END}{tail}"


def main() -> int:
    found = checks()
    files = {README: readme_text(found), RESULTS: results_md(found)}
    return sync(files, check="--check" in sys.argv, script="scripts/gpu_report.py", root=ROOT)


if __name__ == "__main__":
    sys.exit(main())
