"""Fail fast when a hub id cannot be fetched: one short connection to the hub before
``from_pretrained`` or ``load_dataset``, which would otherwise retry for ~25-50 s offline
(huggingface_hub's backoff) before their own error.

An id whose files are already in the local Hugging Face cache is loaded from there (no hub
needed); any other id with the hub unreachable (no network, ``HF_HUB_OFFLINE=1``) raises at
once, naming what was asked for and what to pass instead.
"""

from __future__ import annotations

import os
import socket
import urllib.parse
import urllib.request


def hub_unreachable(timeout: float = 3.0) -> str | None:
    """None when a TCP connection to the hub (``HF_ENDPOINT``, or the HTTPS proxy when one is
    set) opens within ``timeout`` seconds; else why not (offline switch, name, refused)."""
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return "HF_HUB_OFFLINE is set"
    url = urllib.request.getproxies().get("https") or constants.ENDPOINT
    parts = urllib.parse.urlsplit(url if "://" in url else f"http://{url}")
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as e:
        return f"{host}:{port} cannot be reached ({e.strerror or e})"
    return None


def cached(repo_id: str, repo_type: str = "model") -> bool:
    """True when the local Hugging Face cache holds a snapshot of ``repo_id``."""
    from huggingface_hub import constants

    folder = f"{repo_type}s--{repo_id.replace('/', '--')}"
    return os.path.isdir(os.path.join(constants.HF_HUB_CACHE, folder, "snapshots"))


def check_hub(repo_id: str, repo_type: str, what: str, instead: str) -> bool:
    """Whether ``repo_id`` must be read from the cache only (True: cached, hub unreachable).
    Raises ``ValueError`` at once when it is neither cached nor fetchable: ``what`` it is not
    (a built-in name, a local file), that the hub cannot be reached and why, and ``instead``
    (what to pass)."""
    why = hub_unreachable()
    if why is None:
        return False
    if cached(repo_id, repo_type):
        return True
    raise ValueError(
        f"{what}, and the Hugging Face hub cannot be reached from here ({why}), nor is the "
        f"{repo_type} in the local cache. {instead}"
    )
