"""A code-execution reward: the completion's code run against tests in a locked-down subprocess.

Each completion's code (the last fenced ```python block, else the whole text) and the tests
(plain ``assert`` lines) are written to a fresh temporary folder and run by a new Python
interpreter in its own session, with these limits enforced by the operating system:

- CPU time (``RLIMIT_CPU``) and a wall-clock limit (the process group is killed);
- address space (``RLIMIT_AS``: a huge allocation raises MemoryError) and file size
  (``RLIMIT_FSIZE``);
- processes (``RLIMIT_NPROC``; as root the child first drops to the ``nobody`` user, since the
  kernel does not apply that limit to root): a fork bomb gets "Resource temporarily unavailable";
- as root: no network (a new, empty network namespace) and, as ``nobody``, no write access to
  anything the user owns.

A second, Python-level layer (an audit hook installed before the code runs) refuses sockets,
subprocesses and opening files for writing outside the temporary folder; it is a convenience,
not a security boundary (ctypes could get around it), which is why the OS limits come first.
This is a sandbox for a toy lab on your own machine, not for hostile code on a shared server:
use a container or a VM there.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

STATUSES = ("passed", "failed", "timeout", "memory", "killed")
"""What one run of a completion's code can end as."""

_PRELUDE = r"""
import os as _os, sys as _sys
_ROOT = _os.path.realpath(_os.getcwd())
def _guard(event, args):
    if event in ("socket.__new__", "socket.connect", "subprocess.Popen", "os.system",
                 "os.exec", "os.posix_spawn", "os.spawn", "ctypes.dlopen"):
        raise PermissionError(f"{event} is not allowed in the code sandbox")
    if event == "open" and args[0] is not None and not isinstance(args[0], int):
        mode, flags = args[1] or "r", args[2] or 0
        if any(c in str(mode) for c in "wax+") or flags & (_os.O_WRONLY | _os.O_RDWR):
            path = _os.path.realpath(_os.fsdecode(args[0]))
            if not (path == _ROOT or path.startswith(_ROOT + _os.sep)):
                raise PermissionError(f"writing {path} is not allowed: only inside {_ROOT}")
_sys.addaudithook(_guard)
del _guard
"""


@dataclass
class CodeResult:
    """How one completion's code ended: a status from ``STATUSES``, the tail of its stderr."""

    status: str
    detail: str
    seconds: float


def extract_code(completion: str) -> str:
    """The last fenced Python block of ``completion``, else the whole text.

    >>> extract_code("Here:\\n```python\\nx = 1\\n```")
    'x = 1\\n'
    """
    blocks = re.findall(r"```(?:python|py)?\n(.*?)```", completion, re.DOTALL)
    return blocks[-1] if blocks else completion


_LAUNCHER = r"""
import ctypes, os, resource, sys
cpu, mb, fmb, procs = (int(a) for a in sys.argv[1:5])
M = 1024 * 1024
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
resource.setrlimit(resource.RLIMIT_AS, (mb * M, mb * M))
resource.setrlimit(resource.RLIMIT_FSIZE, (fmb * M, fmb * M))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
if os.geteuid() == 0:
    if ctypes.CDLL(None, use_errno=True).unshare(0x40000000) != 0:  # CLONE_NEWNET
        sys.exit("labkit sandbox: could not cut the network (unshare failed)")
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)
resource.setrlimit(resource.RLIMIT_NPROC, (procs, procs))
os.execv(sys.executable, [sys.executable, "-I", "-S", "main.py"])
"""
"""Run first, as its own interpreter: the limits, then (as root) a new empty network namespace
and the ``nobody`` user, then exec the code. ``RLIMIT_NPROC`` is set after ``setuid``, which
checks that limit itself; the kernel ignores it for root, hence ``nobody``. (A launcher, not
``preexec_fn``, which is unsafe when the caller runs threads.)"""


def _world_executable(path: str) -> bool:
    """True when a user other than the owner (``nobody``) can run ``path``."""
    path = os.path.realpath(path)
    parts = [path] + [os.path.dirname(path)]
    while parts[-1] != os.path.dirname(parts[-1]):
        parts.append(os.path.dirname(parts[-1]))
    return all(os.stat(p).st_mode & 0o001 for p in parts)


def interpreter() -> str:
    """The Python that runs the code: this one, or as root one that ``nobody`` may run (the
    code needs only the standard library)."""
    if os.geteuid() != 0:
        return sys.executable
    for path in (
        sys.executable,
        sys._base_executable,
        shutil.which("python3", path="/usr/bin:/bin"),
    ):
        if path and _world_executable(path):
            return path
    raise RuntimeError(
        "the code sandbox drops root to the nobody user, who can run no Python "
        "here: install a system python3 (apt-get install python3)"
    )


def run_code(
    code: str,
    tests: str = "",
    cpu_seconds: int = 2,
    wall_seconds: float = 5.0,
    memory_mb: int = 256,
    file_mb: int = 1,
    max_procs: int = 4,
) -> CodeResult:
    """Run ``code`` then ``tests`` in a sandboxed interpreter (see the module docstring).

    >>> run_code("def add(a, b):\\n    return a + b", "assert add(2, 3) == 5").status
    'passed'
    >>> run_code("1 / 0").detail
    'ZeroDivisionError: division by zero'
    """
    tmp = tempfile.mkdtemp(prefix="labkit-code-")
    try:
        if os.geteuid() == 0:
            os.chown(tmp, 65534, 65534)
        with open(os.path.join(tmp, "main.py"), "w") as f:
            f.write(_PRELUDE + "\n" + code + "\n\n" + tests + "\n")
        env = {"PATH": "/usr/bin:/bin", "HOME": tmp, "TMPDIR": tmp, "PYTHONHASHSEED": "0"}
        t0 = time.perf_counter()
        limits = [str(x) for x in (cpu_seconds, memory_mb, file_mb, max_procs)]
        p = subprocess.Popen(
            [interpreter(), "-I", "-S", "-c", _LAUNCHER, *limits],
            cwd=tmp,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            _, err = p.communicate(timeout=wall_seconds)
        except subprocess.TimeoutExpired:
            _, err = _kill_group(p), b""
            return CodeResult("timeout", f"over {wall_seconds:g} s wall clock", _since(t0))
        finally:
            _kill_group(p)  # what the code forked and left behind
        return _classify(p.returncode, err.decode(errors="replace"), _since(t0))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _since(t0: float) -> float:
    return time.perf_counter() - t0


def _kill_group(p: subprocess.Popen) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    p.wait()


def _classify(rc: int, err: str, seconds: float) -> CodeResult:
    tail = err.strip().splitlines()[-1][:200] if err.strip() else ""
    if rc == 0:
        return CodeResult("passed", "", seconds)
    if rc in (-signal.SIGXCPU, -signal.SIGKILL) and "Error" not in tail:
        return CodeResult("timeout" if rc == -signal.SIGXCPU else "killed", tail, seconds)
    if "MemoryError" in tail:
        return CodeResult("memory", tail, seconds)
    if rc < 0:
        return CodeResult("killed", f"signal {-rc}", seconds)
    return CodeResult("failed", tail, seconds)


def code_reward(name: str = "code_tests", **limits):
    """A reward ``fn(completions, tests, **columns)``: 1.0 when the completion's code passes its
    ``tests`` column in the sandbox (:func:`run_code` with ``limits``), else 0.0.

    After each call ``fn.last_report`` holds the fraction of completions per status (logged by
    the trainer as ``rewards/<name>/<status>``) and ``fn.last_results`` each :class:`CodeResult`.

    >>> fn = code_reward(cpu_seconds=1)
    >>> fn(["def sq(x): return x * x", "def sq(x): return x"], tests=["assert sq(3) == 9"] * 2)
    [1.0, 0.0]
    >>> fn.last_report["passed"], fn.last_results[1].detail
    (0.5, 'AssertionError')
    """

    def reward(completions: list[str], tests: list[str], **kwargs) -> list[float]:
        with ThreadPoolExecutor(max_workers=2) as ex:  # waiting on subprocesses: threads do
            results = list(
                ex.map(
                    lambda ct: run_code(extract_code(ct[0]), ct[1], **limits),
                    zip(completions, tests),
                )
            )
        n = max(len(results), 1)
        reward.last_results = results
        reward.last_report = {s: sum(r.status == s for r in results) / n for s in STATUSES}
        return [float(r.status == "passed") for r in results]

    reward.__name__ = name
    reward.labkit_inline = True  # the limits are in its own subprocesses: no worker hop needed
    return reward


code_tests = code_reward()
"""The code-execution reward with the default limits (2 s CPU, 5 s wall, 256 MB, 1 MB files)."""
