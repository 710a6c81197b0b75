"""The package arrows of ARCHITECTURE.md hold: every labkit import points to a lower layer (or
stays in its own package), so there are no import circles and the math imports no UI; and
``import labkit`` leaves the heavy packages (transformers, pandas, plotly, ...) to first use."""

import ast
import os
import pathlib
import subprocess
import sys

import labkit

ROOT = pathlib.Path(labkit.__file__).parent
# lower number = lower layer; a package may import its own modules and lower layers only
RANK = {
    "core": 0,
    "tasks": 1,
    "utils": 1,
    "testing": 1,
    "models": 2,
    "rewards": 2,
    "envs": 2,
    "classic": 2,
    "runs": 3,
    "algos": 4,
    "experiments": 5,
    "integrations": 5,
    "plots": 6,
    "widgets": 7,
    "cli": 8,
    "__main__": 9,
    "__init__": 9,
}


def _package(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports(path: pathlib.Path):
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = (
                [node.module]
                if node.module != "labkit"
                else [f"labkit.{a.name}" for a in node.names]
            )
            yield from (n for n in names if n.startswith("labkit"))
        elif isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name.startswith("labkit"))


def test_imports_point_down_the_layers():
    wrong = []
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT).with_suffix("")
        here = rel.parts[0] if len(rel.parts) > 1 else rel.name
        for target in _imports(path):
            there = _package(target)
            if there != here and RANK[there] >= RANK[here]:
                wrong.append(f"{path.relative_to(ROOT.parent)} imports {target}")
    assert not wrong, "imports against the arrows of ARCHITECTURE.md:\n" + "\n".join(wrong)


def test_only_plots_and_widgets_import_plotly_or_ipywidgets():
    ui = ("plotly", "ipywidgets", "anywidget")
    wrong = []
    for path in ROOT.rglob("*.py"):
        top = path.relative_to(ROOT).parts[0]
        if top in ("plots", "widgets"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module]
                if isinstance(node, ast.ImportFrom) and node.module
                else []
            )
            wrong += [f"{path.name}: {n}" for n in names if n.split(".")[0] in ui]
    assert not wrong, wrong


# imported on first use, never by `import labkit` (labkit.LAZY and the local imports in
# models.policy, runs.log and algos.rlhf): each costs seconds in every notebook's first cell
DEFERRED = ("transformers", "peft", "trl", "datasets", "pandas", "scipy", "plotly", "ipywidgets")


def test_import_labkit_leaves_the_heavy_packages_for_first_use():
    code = f"import labkit, sys; print(' '.join(m for m in {DEFERRED!r} if m in sys.modules))"
    env = {**os.environ, "PYTHONPATH": str(ROOT.parent)}
    cmd = [sys.executable, "-c", code]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [], f"`import labkit` imported {out.stdout.strip()}"


def test_lazy_names_resolve_and_are_listed():
    assert set(labkit.__all__) <= set(dir(labkit))  # tab completion sees the lazy names
    assert set(labkit.LAZY) <= set(labkit.__all__)
    for name in labkit.__all__:
        assert getattr(labkit, name) is not None, name
    from labkit import plots
    from labkit.plots.report import report

    assert labkit.plots is plots and labkit.report is report  # the module, and the function
    assert labkit.diagnose.__module__ == "labkit.runs.diagnose"
