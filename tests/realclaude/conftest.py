"""Fixtures for tests that drive the real Claude Code CLI (see harness.py for the API).

Every test under tests/realclaude/ that uses ``claude_binary`` (directly or through
``claude_fleet``) gets the ``realclaude`` marker, so ``pytest -m "not realclaude"`` leaves
out all that need the CLI. Tests that use ``claude_binary`` or
``claude_fleet`` skip with the reason when the pinned version is not installed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import libtmux
import pytest

from tests.realclaude.harness import ClaudeBinary, ClaudeFleet, find_claude

HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        uses_cli = "claude_binary" in getattr(item, "fixturenames", ())
        if uses_cli and HERE in Path(str(item.fspath)).resolve().parents:
            item.add_marker(pytest.mark.realclaude)


@pytest.fixture(scope="session")
def claude_binary() -> ClaudeBinary:
    """The pinned Claude Code binary ($NBS_CLAUDE_VERSION / $NBS_CLAUDE_BIN); skips if absent."""
    found = find_claude()
    if isinstance(found, str):
        if os.environ.get("NBS_REQUIRE_CLAUDE"):
            # CI installs the CLI itself: a missing binary there is a failure, not a skip.
            pytest.fail(f"NBS_REQUIRE_CLAUDE is set but {found}")
        pytest.skip(found)
    return found


@pytest.fixture
def claude_fleet(
    server: libtmux.Server, tmp_path: Path, claude_binary: ClaudeBinary
) -> Iterator[ClaudeFleet]:
    """Start agents with ``claude_fleet.start(scenario, ...)`` on this test's private tmux
    server; their scripted APIs stop when the test ends (libtmux kills the server)."""
    fleet = ClaudeFleet(server, tmp_path, claude_binary)
    try:
        yield fleet
    finally:
        fleet.close()
