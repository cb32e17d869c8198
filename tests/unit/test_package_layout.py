"""The package's names and rooms (issue 35, item 6), read from the files themselves:

- no two modules of nbs_tui share a file name (``__init__.py`` aside), so a name says which
  module it is (``commands.py`` once meant the key table and tmux's command path);
- at most eight modules loose at the package root;
- core/ holds only its sub-rooms (screen, detection, sidecar, control, fleet, notifications, fleet_api,
  review), no loose module;
- config.py imports no port below it (claude/, files/, tmux/): config is below the ports.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import nbs_tui

PACKAGE = Path(nbs_tui.__file__).parent

ROOT_MODULES = {"__init__", "__main__", "app", "bridge", "cli", "completion", "config", "server_options"}
"""The modules that stay at the root: the entry points, the app and its bridge, config."""

CORE_ROOMS = {"screen", "detection", "sidecar", "control", "fleet", "notifications", "fleet_api", "review", "queue"}
"""``notifications``: the notification policy's pure rules, below the config and the sidecar that
read them; the notify room (nbs_tui/notify/) applies them. ``queue``: the work queue's records, task
states and hand-out rules."""


def modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def test_no_two_modules_share_a_name() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for path in modules():
        if path.name != "__init__.py":
            where[path.name].append(path.relative_to(PACKAGE).as_posix())
    shared = {name: sorted(paths) for name, paths in where.items() if len(paths) > 1}
    assert shared == {}


def test_at_most_eight_modules_at_the_root() -> None:
    loose = {path.stem for path in PACKAGE.glob("*.py")}
    assert len(ROOT_MODULES) <= 8
    assert loose == ROOT_MODULES, f"at the root: {sorted(loose)}"


def test_core_holds_only_its_rooms() -> None:
    core = PACKAGE / "core"
    rooms = {path.name for path in core.iterdir() if path.is_dir() and path.name != "__pycache__"}
    assert rooms == CORE_ROOMS
    assert all((core / room / "__init__.py").is_file() for room in rooms)
    loose = {path.stem for path in core.glob("*.py")}
    assert loose == {"__init__"}, f"loose in core/: {sorted(loose)}"


def imported_modules(path: Path) -> set[str]:
    """Every module an import in ``path`` names, those inside functions and under
    ``TYPE_CHECKING`` too (the package has no relative imports: a test of its own says so)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_config_imports_no_port() -> None:
    below = ("nbs_tui.claude", "nbs_tui.files", "nbs_tui.tmux")
    imports = imported_modules(PACKAGE / "config.py")
    assert any(name.startswith("nbs_tui.") for name in imports), "config's imports were not read"
    assert sorted(n for n in imports if n.startswith(below)) == []


def test_the_package_has_no_relative_import() -> None:
    """`imported_modules` reads absolute names only; a relative import would slip past it."""
    relative = [
        f"{path.relative_to(PACKAGE)}:{node.lineno}"
        for path in modules()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        if isinstance(node, ast.ImportFrom) and node.level
    ]
    assert relative == []
