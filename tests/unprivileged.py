"""Run part of a test as a user whom file permissions bind, even when the tests run as root.

Root ignores a folder's mode, so a ``chmod 0o555`` test proves nothing under root (how CI runs).
`run_unprivileged` runs a probe script in a child Python: its ``setup`` (imports) runs as the
caller, then, under root, the child drops to ``nobody`` (uid/gid 65534) for good before its
``body`` runs. Imports come first so the checkout need not be readable by ``nobody``. The probe's
folder comes from `reachable_dir`: pytest's ``tmp_path`` lies under a root-only ``0700`` folder.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

NOBODY = 65534
"""uid and gid of ``nobody``/``nogroup`` on Debian-like systems; setuid needs no such entry."""

_DROP = f"""
import os as _os
if _os.geteuid() == 0:
    _os.setgroups([])
    _os.setgid({NOBODY})
    _os.setuid({NOBODY})
assert _os.geteuid() != 0 and _os.getegid() != 0, "still privileged"
"""


PRELOAD_UI = """
import importlib as _importlib
import pkgutil as _pkgutil
import rich as _rich
import textual as _textual
import nbs_tui as _nbs_tui


def _preload(package: object) -> None:
    # rich and Textual import many modules lazily (markup, emoji, ANSI, scrollbars, tracebacks):
    # after the drop a checkout in a root-only folder (as CI clones it) cannot be read, so a
    # probe that draws widgets imports all of them first
    for info in _pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if any(part in info.name for part in ("__main__", "demo", "windows", "_win", "web", "cli")):
            continue
        try:
            _importlib.import_module(info.name)
        except Exception:  # a platform's module (Windows drivers): not needed here
            pass


for _package in (_rich, _textual, _nbs_tui):
    _preload(_package)
"""
"""A probe ``setup`` snippet for bodies that run a Textual app (see `_preload`'s comment)."""


@contextmanager
def reachable_dir() -> Iterator[Path]:
    """A fresh folder the probe's user owns and can reach from ``/``; removed afterwards."""
    path = Path(tempfile.mkdtemp(prefix="nbs-unprivileged-"))
    try:
        yield path
    finally:
        for folder, dirs, _files in os.walk(path):  # the probe may leave read-only folders
            for name in dirs:
                os.chmod(os.path.join(folder, name), 0o755)
        shutil.rmtree(path)


def give_away(path: Path) -> None:
    """Hand ``path`` and everything below it to the probe's user (a no-op unless root)."""
    if os.geteuid() != 0:
        return
    for folder, dirs, files in os.walk(path):
        os.chown(folder, NOBODY, NOBODY)
        for name in dirs + files:
            os.chown(os.path.join(folder, name), NOBODY, NOBODY, follow_symlinks=False)


def run_unprivileged(
    setup: str, body: str, *args: str, timeout: float = 60.0
) -> subprocess.CompletedProcess[str]:
    """Run ``setup``, drop root (if held), run ``body``; ``sys.argv[1:]`` is ``args``. The test
    run's own state folder (tests/conftest.py) is root's: the dropped process gets none, as before."""
    env = {k: v for k, v in os.environ.items() if k != "XDG_STATE_HOME"}
    return subprocess.run(
        [sys.executable, "-c", f"{setup}\n{_DROP}\n{body}", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env=env,
    )
