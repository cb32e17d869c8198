"""Shared test configuration. libtmux's pytest plugin (loaded automatically) gives each test
that asks for ``server`` or ``session`` a private tmux server on its own socket."""

from __future__ import annotations

from pathlib import Path

import pytest

import nbs_tui.runtime

REPO_ROOT = Path(__file__).resolve().parent.parent
PEER_CORPUS = next(
    (
        up / "shared" / "corpus" / "peer-screens"
        for up in REPO_ROOT.parents
        if (up / "shared" / "corpus" / "peer-screens").is_dir()
    ),
    REPO_ROOT.parent / "shared" / "corpus" / "peer-screens",
)
"""Next to the checkout, or next to a folder above it (a worktree under ``wt/`` finds it too)."""


@pytest.fixture
def peer_corpus() -> Path:
    """Claude Code screens recorded by other tools' test suites (read in place, never copied)."""
    if not (PEER_CORPUS / "labels.tsv").is_file():
        pytest.skip(f"peer corpus not found at {PEER_CORPUS}")
    return PEER_CORPUS


@pytest.fixture(autouse=True)
def _no_background_service(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """A dashboard under test acts itself instead of starting a detached ``nbs-tui service``
    (``service = "auto"``), in this process and in the CLIs tests start; a test of that very
    behaviour is marked ``service_auto``."""
    if request.node.get_closest_marker("service_auto") is None:
        monkeypatch.setattr(nbs_tui.runtime, "AUTO_SERVICE", False)
        monkeypatch.setenv("NBS_SERVICE", "off")
