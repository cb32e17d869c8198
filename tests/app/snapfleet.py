"""A deterministic fleet for snapshot tests: recorded Claude Code screens drawn once, then still.

Each agent pane runs ``screens/claude`` (named so discovery takes it for Claude Code), which
prints a screen recorded from the demo agents and sleeps. Process ids and folders differ from
run to run, so `StableFleet` rewrites them in what the app sees; everything else is real tmux.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import libtmux
import pytest

from nbs_tui.core.fleet.model import PaneId, PaneInfo, ServerAddress
from nbs_tui.core.screen.pane_screen import PaneScreen
from nbs_tui.tmux.commands import Guard
from nbs_tui.tmux.fleet import TmuxFleet
from nbs_tui.tmux.port import FleetListener, FleetPort, PaneHistory
from tests.gitrepo import IDENTITY, AgentRepo, reviewed_repo

SCREENS = Path(__file__).resolve().parent / "screens"
PANE_WIDTH, PANE_HEIGHT = 72, 30

# (session, window name, recorded screen or None for a shell, pane title, project)
LAYOUT: tuple[tuple[str, str, str | None, str, str], ...] = (
    ("alpha", "mirror", "working", "⠂ Speed up the screen mirror", "api-server"),
    ("alpha", "inbox", "permission", "✳ Parse the control inbox", "web-ui"),
    ("alpha", "shell", None, "build", "web-ui"),
    ("beta", "docs", "plan", "✳ Docs: quick start", "docs-site"),
    ("beta", "fetch", "idle", "✳ Retry flaky fetches", "docs-site"),
    ("beta", "team", "question", "✳ Pick the README screenshot", "nbs-team"),
)


# The limited variant (tests/app/test_snapshots_limited.py) adds a session replaying a limit screen
# recorded from the real CLI at its own size (120x40), so its lines are not wrapped.
LIMITED_SCREEN = Path(__file__).resolve().parents[1] / "corpus" / "claude" / "2.1.332" / "limited_session.ansi"
LIMITED = ("gamma", "quota", "✳ Nightly batch run", "batch-jobs")
LIMITED_WIDTH, LIMITED_HEIGHT = 120, 40


def _command(screen: str | None) -> str:
    if screen is None:
        return f"sh -c {shlex.quote('cat ' + shlex.quote(str(SCREENS / 'shell.txt')) + '; exec sleep 100000')}"
    x, y = (SCREENS / f"{screen}.cursor").read_text().split()
    return " ".join(shlex.quote(a) for a in (str(SCREENS / "claude"), str(SCREENS / f"{screen}.ans"), x, y))


def start_snapshot_fleet(server: libtmux.Server) -> None:
    """Create the sessions, windows and panes of `LAYOUT` on ``server`` (fixed size)."""
    made: dict[str, libtmux.Session] = {}
    for session_name, window_name, screen, title, _project in LAYOUT:
        if session_name not in made:
            session = server.new_session(
                session_name=session_name, window_name=window_name, window_command=_command(screen),
                x=PANE_WIDTH, y=PANE_HEIGHT,
            )
            server.cmd("set-option", "-g", "default-size", f"{PANE_WIDTH}x{PANE_HEIGHT}")
            made[session_name] = session
            window = session.active_window
        else:
            window = made[session_name].new_window(window_name=window_name, window_shell=_command(screen), attach=False)
        pane = window.active_pane
        assert pane is not None and pane.pane_id is not None
        server.cmd("select-pane", "-t", pane.pane_id, "-T", title)


def start_limited_session(server: libtmux.Server, tmp: Path) -> None:
    """Add the `LIMITED` session: ``LIMITED_SCREEN`` without its header, cursor in the input box."""
    lines = LIMITED_SCREEN.read_text().split("\n")
    while lines and lines[0].startswith("# "):  # the corpus header (version, state)
        lines.pop(0)
    while lines and not lines[0]:
        lines.pop(0)
    screen = tmp / "limited.ans"
    screen.write_text("\n".join(lines).rstrip("\n"))
    plain = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in lines]
    prompt = max(i for i, line in enumerate(plain) if line.startswith("❯"))  # the input box, not the sent prompt
    command = " ".join(shlex.quote(a) for a in (str(SCREENS / "claude"), str(screen), "2", str(prompt)))
    session_name, window_name, title, _project = LIMITED
    session = server.new_session(
        session_name=session_name, window_name=window_name, window_command=command,
        x=LIMITED_WIDTH, y=LIMITED_HEIGHT,
    )
    server.cmd("set-option", "-t", str(session.session_id), "window-size", "manual")
    server.cmd("resize-window", "-t", str(session.active_window.window_id), "-x", str(LIMITED_WIDTH), "-y", str(LIMITED_HEIGHT))
    pane = session.active_window.active_pane
    assert pane is not None and pane.pane_id is not None
    server.cmd("select-pane", "-t", pane.pane_id, "-T", title)


def _project(session: str, window: str) -> str:
    if (session, window) == LIMITED[:2]:
        return LIMITED[3]
    return next((p for s, w, _, _, p in LAYOUT if s == session and w == window), "project")


def _stable(pane: PaneInfo) -> PaneInfo:
    project = _project(pane.session_name, pane.window_name)
    return replace(pane, pid=4000 + int(pane.pane_id.lstrip("%") or 0), current_path=f"/work/{project}")


class _StableListener(FleetListener):
    def __init__(self, listener: FleetListener) -> None:
        self.listener = listener

    def fleet_changed(self, panes: Sequence[PaneInfo]) -> None:
        self.listener.fleet_changed([_stable(p) for p in panes])

    def screens_changed(self, pane_ids: frozenset[PaneId]) -> None:
        self.listener.screens_changed(pane_ids)

    def connection_changed(self, connected: bool, message: str) -> None:
        self.listener.connection_changed(connected, message)


class StableFleet(FleetPort):
    """A `TmuxFleet` whose panes report fixed pids and folders."""

    def __init__(self, server: ServerAddress, listener: FleetListener) -> None:
        self.inner = TmuxFleet(server, listener=_StableListener(listener))

    def start(self) -> None:
        self.inner.start()

    def wait_seeded(self, timeout: float) -> bool:
        return self.inner.wait_seeded(timeout)

    def stop(self) -> None:
        self.inner.stop()

    def panes(self) -> list[PaneInfo]:
        return [_stable(p) for p in self.inner.panes()]

    def screen(self, pane_id: PaneId) -> PaneScreen | None:
        return self.inner.screen(pane_id)

    def capture_text(self, pane_id: PaneId) -> str:
        return self.inner.capture_text(pane_id)

    def capture_history(self, pane_id: PaneId, lines: int) -> PaneHistory:
        return self.inner.capture_history(pane_id, lines)

    def send_text(self, pane_id: PaneId, text: str, *, guard: Guard | None = None) -> bool:
        return self.inner.send_text(pane_id, text, guard=guard)

    def send_keys(self, pane_id: PaneId, *keys: str, guard: Guard | None = None) -> bool:
        return self.inner.send_keys(pane_id, *keys, guard=guard)


def mirror_in_reviewed_worktree(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> AgentRepo:
    """`tests.gitrepo.reviewed_repo`, committed under git's fixed identity, as the folder of
    the snapshot fleet's mirrored (first, working) agent: what the review screen shows."""
    for name, value in IDENTITY.items():
        monkeypatch.setenv(name, value)
    repo = reviewed_repo(tmp_path)
    stable = _stable

    def in_the_worktree(pane: PaneInfo) -> PaneInfo:
        pane = stable(pane)
        return replace(pane, current_path=str(repo.worktree)) if pane.window_name == "mirror" else pane

    monkeypatch.setattr(f"{__name__}._stable", in_the_worktree)
    return repo
