"""No import cycle anywhere in nbs_tui: every import counts, those inside functions and under
``TYPE_CHECKING`` included, since a cycle that only works because an import was moved into a
function is still a cycle in the design.

The graph is grimp's (the engine import-linter runs on, already a test dependency); the cycles
are its strongly connected components. A second test plants a cycle in a scratch package so the
check is seen to fail on one."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

import grimp
import pytest


def import_cycles(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Every group of modules that import one another, round and round (Tarjan's algorithm,
    iterative: the package is deep enough to make recursion a risk)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(edges.get(root, ())))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            if targets:
                target = targets.pop()
                if target not in index:
                    index[target] = low[target] = counter
                    counter += 1
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, sorted(edges.get(target, ()))))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1 or node in edges.get(node, ()):
                    cycles.append(sorted(group))
    return cycles


def package_edges(package: str) -> dict[str, set[str]]:
    graph = grimp.build_graph(package, include_external_packages=False, cache_dir=None)
    return {module: set(graph.find_modules_directly_imported_by(module)) for module in graph.modules}


def test_nbs_tui_has_no_import_cycle() -> None:
    edges = package_edges("nbs_tui")
    assert len(edges) > 100, "the graph of nbs_tui was not read"
    cycles = import_cycles(edges)
    assert cycles == [], "modules that import one another: " + "; ".join(" <-> ".join(c) for c in cycles)


def test_a_cycle_planted_in_a_package_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "planted_cycle"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "first.py").write_text("from planted_cycle import second\n")
    # the way back hides inside a function, as the cycles this check exists for did
    (package / "second.py").write_text("def late():\n    from planted_cycle import first\n    return first\n")
    (package / "third.py").write_text("from planted_cycle import first\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        cycles = import_cycles(package_edges("planted_cycle"))
    finally:
        sys.modules.pop("planted_cycle", None)
    assert cycles == [["planted_cycle.first", "planted_cycle.second"]]
