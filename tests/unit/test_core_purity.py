"""The core must stay pure: importing it loads no UI, no tmux library and no file watcher, and it
imports no other layer of nbs_tui. (The same rules, and those of the other layers, are
import-linter contracts in pyproject.toml, run by scripts/test; these tests also catch a module
added after the contracts were written.)"""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import nbs_tui.core

FORBIDDEN = ("textual", "rich", "libtmux", "watchfiles")
CORE = Path(nbs_tui.core.__path__[0])


def test_core_modules_import_no_ui_tmux_or_watcher() -> None:
    modules = [m.name for m in pkgutil.walk_packages(nbs_tui.core.__path__, "nbs_tui.core.")]
    assert modules, "the core package has no modules"
    probe = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "", f"core imported {result.stdout.strip()}"


def imported_names(tree: ast.AST, package: str) -> list[tuple[int, str]]:
    """Every module an import statement names (lazy and TYPE_CHECKING imports included)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the module's package
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                found.append((node.lineno, f"{base}.{node.module}" if node.module else base))
            elif node.module:
                found.append((node.lineno, node.module))
    return found


def test_core_imports_only_the_core_of_nbs_tui() -> None:
    files = sorted(CORE.rglob("*.py"))  # the sub-rooms' modules too
    assert len(files) > 5
    bad = []
    for path in files:
        package = ".".join(("nbs_tui", *path.relative_to(CORE.parent).parent.parts))
        for line, name in imported_names(ast.parse(path.read_text(), str(path)), package):
            top = name.split(".")[0]
            if top in FORBIDDEN or (top == "nbs_tui" and not (name == "nbs_tui.core" or name.startswith("nbs_tui.core."))):
                bad.append(f"{path.relative_to(CORE)}:{line} imports {name}")
    assert bad == []


def test_the_ast_check_sees_a_forbidden_import() -> None:
    tree = ast.parse("from nbs_tui.files.chat_io import read_chat\nimport textual.app\nfrom ..tmux import port\n")
    names = [name for _, name in imported_names(tree, "nbs_tui.core")]
    assert names == ["nbs_tui.files.chat_io", "textual.app", "nbs_tui.tmux"]
