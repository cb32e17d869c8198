"""Every module, folder, class and function docs/architecture.md names exists, so the map cannot
drift from the code unseen: modules move (/work's MOVES maps), and a walk that names a step the
code no longer has is found here rather than by a newcomer. testing.md and the README are held
to the modules and files they name.

Read from the doc's backticked names, outside nothing (code blocks included):

- a path (``core/detection/detect.py``, ``tmux/``, ``tests/unit/``): a file or folder under
  nbs_tui/ or the repository;
- ``nbs_tui.a.b``: a module, or a name defined in one;
- ``Class`` / ``Class.member`` / ``snake_name``: defined somewhere in nbs_tui (a member in the
  class's body, its ``self.`` assignments, or a base class's);
- a module followed by a name (```sidecar/sidecar_tick.py` `SidecarTick.run```, the walks' way
  of naming a step): the name defined in that very module.

``WAITING`` lists what the doc names ahead of the code, each with the branch that brings it; the
check holds the present state exactly, so a branch that lands makes it fail until its names are
taken out of the set.
"""

from __future__ import annotations

import ast
import functools
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import nbs_tui

PACKAGE = Path(nbs_tui.__file__).parent
ROOT = PACKAGE.parent

NOT_CODE = {"Enter"}
"""Backticked words that look like a class name but are not code (a tmux key)."""

WAITING: set[str] = set()
"""Names the doc gives ahead of the code, with the branch that brings them (empty: none)."""

TICKED = re.compile(r"`([^`\n]+)`")
PAIR = re.compile(r"`((?:nbs_tui/)?[\w/]+\.py)`\s+`([A-Za-z_][\w.]*)`")
PATH = re.compile(r"^[\w.-]+(?:/[\w.-]*)+$")
DOTTED = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$")
CLASS_NAME = re.compile(r"^[A-Z]\w*[a-z]\w*$")  # CamelCase, not an ALL-CAPS placeholder like DIR


@dataclass
class Index:
    """What nbs_tui defines, read with ast (nothing imported)."""

    modules: dict[str, set[str]] = field(default_factory=dict)
    """module path relative to nbs_tui/ -> its top-level names"""
    classes: dict[str, list[tuple[set[str], list[str]]]] = field(default_factory=lambda: defaultdict(list))
    """class name -> (members, base names) of each class of that name"""
    names: set[str] = field(default_factory=set)
    """every top-level name and every class member, anywhere"""

    def members(self, cls: str, seen: frozenset[str] = frozenset()) -> set[str]:
        found: set[str] = set()
        for members, bases in self.classes.get(cls, []):
            found |= members
            for base in bases:
                if base not in seen:
                    found |= self.members(base, seen | {cls})
        return found

    def defines(self, module: str, name: str) -> bool:
        """``name`` (``Name`` or ``Class.member``) is defined in ``module`` (relative path)."""
        head, _, member = name.partition(".")
        if head not in self.modules.get(module, set()):
            return False
        return not member or member.split(".")[0] in self.members(head)


def top_level(node: ast.AST) -> set[str]:
    names: set[str] = set()
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        names.add(node.name)
    elif isinstance(node, ast.Assign):
        names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        names.add(node.target.id)
    return names


def class_members(node: ast.ClassDef) -> set[str]:
    members: set[str] = set()
    for item in node.body:
        members |= top_level(item)
    for sub in ast.walk(node):
        targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target] if isinstance(sub, ast.AnnAssign) else []
        for target in targets:
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
                members.add(target.attr)
    return members


def base_name(base: ast.expr) -> str:
    """``Base``, ``module.Base`` and ``Base[T]`` as ``Base``."""
    named = base.value if isinstance(base, ast.Subscript) else base
    if isinstance(named, ast.Attribute):
        return named.attr
    return named.id if isinstance(named, ast.Name) else ""


def index(package: Path = PACKAGE) -> Index:
    found = Index()
    for path in sorted(package.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        names: set[str] = set()
        for statement in tree.body:
            names |= top_level(statement)
        found.modules[path.relative_to(package).as_posix()] = names
        found.names |= names
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                members = class_members(node)
                found.classes[node.name].append((members, [base_name(b) for b in node.bases]))
                found.names |= members
    return found


@functools.cache
def package_index() -> Index:
    """nbs_tui's index, read once per test run."""
    return index()


def module_file(dotted: str, package: Path = PACKAGE) -> str | None:
    """The relative path of module ``nbs_tui.a.b`` (``a/b.py`` or ``a/b/__init__.py``)."""
    parts = dotted.split(".")[1:]
    for candidate in ("/".join(parts) + ".py", "/".join([*parts, "__init__.py"])):
        if (package / candidate).is_file():
            return candidate
    return None


def path_exists(text: str, package: Path, root: Path) -> bool:
    relative = text.removeprefix("nbs_tui/")
    return (package / relative).exists() or (root / text).exists()


def dotted_exists(text: str, found: Index, package: Path) -> bool:
    """``nbs_tui.a.b`` is a module, or a name defined in its longest module prefix."""
    parts = text.split(".")
    for cut in range(len(parts), 1, -1):
        module = module_file(".".join(parts[:cut]), package)
        if module is not None:
            rest = ".".join(parts[cut:])
            return not rest or found.defines(module, rest)
    return False


def missing_names(doc: str, found: Index, package: Path = PACKAGE, root: Path = ROOT) -> set[str]:
    """Every name the doc gives that the code does not have."""
    missing: set[str] = set()
    for module, name in PAIR.findall(doc):
        if not found.defines(module.removeprefix("nbs_tui/"), name):
            missing.add(f"{module} {name}")
    for text in TICKED.findall(doc):
        text = text.strip().rstrip("()")
        if PATH.match(text):
            if not path_exists(text, package, root):
                missing.add(text)
        elif text.startswith("nbs_tui.") and DOTTED.match(text):
            if not dotted_exists(text, found, package):
                missing.add(text)
        elif DOTTED.match(text) and text not in NOT_CODE:
            head, _, member = text.partition(".")
            if CLASS_NAME.match(head):
                defined = head in found.classes or head in found.names
                if not defined or (member and member.split(".")[0] not in found.members(head)):
                    missing.add(text)
            elif "_" in head.strip("_") and not member and head not in found.names:
                missing.add(text)  # a snake_case function or constant
    return missing


def missing_modules(doc: str, found: Index, package: Path = PACKAGE, root: Path = ROOT) -> set[str]:
    """The Python files, nbs_tui paths and ``nbs_tui.`` modules a guide names that do not exist."""
    missing: set[str] = set()
    for text in TICKED.findall(doc):
        text = text.strip()
        if PATH.match(text) and (text.endswith(".py") or text.startswith(("nbs_tui/", "tests/", "bench/"))):
            if not path_exists(text, package, root):
                missing.add(text)
        elif text.startswith("nbs_tui.") and DOTTED.match(text) and not dotted_exists(text, found, package):
            missing.add(text)
    return missing


def test_the_architecture_doc_names_only_what_exists() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert PAIR.search(doc), "the walks' module-and-name pairs were not read"
    assert missing_names(doc, package_index()) == WAITING


def test_testing_and_the_readme_name_only_modules_that_exist() -> None:
    found = package_index()
    for guide in (ROOT / "docs" / "testing.md", ROOT / "README.md"):
        assert missing_modules(guide.read_text(encoding="utf-8"), found) == set(), guide.name


def test_a_moved_module_and_a_vanished_step_are_found(tmp_path: Path) -> None:
    # the checker itself can fail: a package of one module, and a doc naming it right and wrong
    package = tmp_path / "nbs_tui"
    (package / "room").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "room" / "__init__.py").write_text("")
    (package / "room" / "part.py").write_text(
        "class Base:\n    def run(self): ...\n\nclass Part(Base):\n"
        "    def __init__(self):\n        self.seen = 0\n\n    def step(self): ...\n\ndef make_part(): ...\n"
    )
    doc = (
        "`room/part.py` `Part.step`, `Part.run` (inherited), `Part.seen`, `make_part()`, `nbs_tui.room.part`,\n"
        "`nbs_tui.room.part.Part`, `room/`; gone: `room/old.py`, `nbs_tui.room.old`, `Gone`, `Part.left`,\n"
        "`room/part.py` `Other.step`, `made_part`, `nbs_tui.room.part.Nope`; not code: `Enter`, `DIR`, `tick`\n"
    )
    assert missing_names(doc, index(package), package, tmp_path) == {
        "room/old.py",
        "nbs_tui.room.old",
        "Gone",
        "Part.left",
        "room/part.py Other.step",
        "Other.step",
        "made_part",
        "nbs_tui.room.part.Nope",
    }
    found = index(package)
    assert missing_modules(doc, found, package, tmp_path) == {"room/old.py", "nbs_tui.room.old", "nbs_tui.room.part.Nope"}
