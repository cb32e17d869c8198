"""The core must stay pure: importing it loads no UI, no tmux library and no file watcher."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import nbs_tui.core

FORBIDDEN = ("textual", "libtmux", "watchfiles")


def test_core_modules_import_no_ui_tmux_or_watcher() -> None:
    modules = [f"nbs_tui.core.{m.name}" for m in pkgutil.iter_modules(nbs_tui.core.__path__)]
    assert modules, "the core package has no modules"
    probe = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "", f"core imported {result.stdout.strip()}"
