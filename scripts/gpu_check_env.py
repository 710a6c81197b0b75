"""The GPU check's ``env`` phase: Python, each package labkit and the check use (version and the
folder it was imported from: the machine's own or the carried wheels), the GPU (name, compute
capability, memory, the precision labkit picks, ``nvidia-smi``), as JSON.

    python scripts/gpu_check_env.py --json env.json
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import pathlib
import platform
import subprocess
import sys

PACKAGES = {  # import name -> distribution name
    "torch": "torch",
    "transformers": "transformers",
    "peft": "peft",
    "accelerate": "accelerate",
    "trl": "trl",
    "datasets": "datasets",
    "pyarrow": "pyarrow",
    "plotly": "plotly",
    "pebble": "pebble",
    "math_verify": "math-verify",
    "tokenizers": "tokenizers",
    "huggingface_hub": "huggingface-hub",
    "regex": "regex",
    "numpy": "numpy",
    "pandas": "pandas",
    "labkit": None,
}


def package(name: str, dist: str | None) -> dict:
    try:
        mod = importlib.import_module(name)
    except Exception as e:  # noqa: BLE001  (whatever a broken package raises: the check goes on)
        return {"error": f"{type(e).__name__}: {e}"[:300]}
    where = str(pathlib.Path(mod.__file__).parent.parent) if getattr(mod, "__file__", None) else ""
    try:
        version = importlib.metadata.version(dist) if dist else None
    except importlib.metadata.PackageNotFoundError:
        version = None
    return {"version": version or getattr(mod, "__version__", None), "from": where}


def device() -> dict:
    import torch

    info = {"cuda_available": torch.cuda.is_available(), "torch_cuda": torch.version.cuda}
    if not torch.cuda.is_available():
        return info
    from labkit.models.device import choose_precision

    props = torch.cuda.get_device_properties(0)
    info.update(
        name=torch.cuda.get_device_name(0),
        capability=list(torch.cuda.get_device_capability(0)),
        memory_gib=round(props.total_memory / 2**30, 1),
        multiprocessors=props.multi_processor_count,
        cudnn=torch.backends.cudnn.version(),
        labkit_precision=choose_precision("cuda"),
        is_bf16_supported=torch.cuda.is_bf16_supported(),
    )
    return info


def nvidia_smi() -> str:
    try:
        cmd = ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv"]
        return subprocess.run(
            cmd, check=False, capture_output=True, text=True, timeout=20
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"not available: {e}"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", type=pathlib.Path, required=True)
    args = ap.parse_args()
    env = {
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "platform": platform.platform(),
        "packages": {name: package(name, dist) for name, dist in PACKAGES.items()},
        "nvidia_smi": nvidia_smi(),
    }
    env["device"] = device()
    args.json.write_text(json.dumps(env) + "\n")  # one line: read back as JSON lines
    print(json.dumps(env, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
