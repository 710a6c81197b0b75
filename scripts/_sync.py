"""Write generated files, or with ``--check`` only name the stale ones: the loop the doc
generators (``gpu_report.py``, ``results_tables.py``, ``equations.py``, ``config_table.py``)
share. A script imports it after putting its own folder on ``sys.path``, so the tests that load
a script by its file path can import it too.

>>> import tempfile
>>> root = pathlib.Path(tempfile.mkdtemp())
>>> files = {root / "docs" / "A.md": "new\\n"}
>>> sync(files, check=True, script="scripts/a.py", root=root)
docs/A.md is stale: run python scripts/a.py
1
>>> sync(files, check=False, script="scripts/a.py", root=root)
wrote docs/A.md
0
>>> sync(files, check=True, script="scripts/a.py", root=root, say_fresh=True)
docs/A.md is up to date
0
"""

from __future__ import annotations

import pathlib


def stale(files: dict[pathlib.Path, str]) -> list[pathlib.Path]:
    """The paths whose text on disk is not the generated text (a missing file is stale)."""
    return [p for p, text in files.items() if not p.exists() or p.read_text() != text]


def sync(
    files: dict[pathlib.Path, str],
    *,
    check: bool,
    script: str,
    root: pathlib.Path,
    say_fresh: bool = False,
    wrote: str = "",
) -> int:
    """Write each stale file of ``files`` (path -> generated text), or with ``check`` only print
    ``<path> is stale: run python <script>`` for each; the exit code: 1 if ``check`` found one
    stale, else 0. Paths print relative to ``root``; ``say_fresh`` also names the files that are
    up to date, ``wrote`` is added to each "wrote <path>" line."""
    old = stale(files)
    for p, text in files.items():
        name = p.relative_to(root)
        if p not in old:
            if say_fresh:
                print(f"{name} is up to date")
        elif check:
            print(f"{name} is stale: run python {script}")
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)
            print(f"wrote {name}{wrote}")
    return 1 if check and old else 0
