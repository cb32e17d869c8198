"""Shared helpers for the live-mirror tests: a recording listener, a running fleet, captures."""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import libtmux
from libtmux.test.retry import retry_until

from nbs_tui.core.fleet.model import PaneId, PaneInfo, ServerAddress
from nbs_tui.core.screen.pane_screen import BLANK, Cell, PaneScreen
from nbs_tui.tmux.fleet import TmuxFleet
from nbs_tui.tmux.port import FleetListener

WAIT = 10.0


class Recorder(FleetListener):
    """A FleetListener that keeps everything it is told, safely across threads."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.fleets: list[list[PaneInfo]] = []
        self.changed: set[PaneId] = set()
        self.screen_calls = 0
        self.connections: list[tuple[bool, str]] = []

    def fleet_changed(self, panes: Sequence[PaneInfo]) -> None:
        with self.lock:
            self.fleets.append(list(panes))

    def screens_changed(self, pane_ids: frozenset[PaneId]) -> None:
        with self.lock:
            self.changed |= pane_ids
            self.screen_calls += 1

    def connection_changed(self, connected: bool, message: str) -> None:
        with self.lock:
            self.connections.append((connected, message))

    @property
    def last_fleet(self) -> list[PaneInfo]:
        with self.lock:
            return list(self.fleets[-1]) if self.fleets else []


def mirror_of(fleet: TmuxFleet, pane_id: str | None) -> PaneScreen:
    """The fleet's mirror of ``pane_id``, which must exist."""
    screen = fleet.screen(str(pane_id))
    assert screen is not None, f"no mirror of {pane_id}"
    return screen


def mirror_lines(fleet: TmuxFleet, pane_id: str | None) -> list[str]:
    """The mirror's text rows; none while the fleet has no mirror of the pane (yet)."""
    screen = fleet.screen(str(pane_id))
    return screen.text_lines() if screen is not None else []


def address(server: libtmux.Server) -> ServerAddress:
    return ServerAddress(socket_name=server.socket_name)


@contextmanager
def running_fleet(
    server: libtmux.Server, sessions: Sequence[str] = (), **kwargs: object
) -> Iterator[tuple[TmuxFleet, Recorder]]:
    recorder = Recorder()
    fleet = TmuxFleet(address(server), sessions, recorder, **kwargs)  # type: ignore[arg-type]
    fleet.start()
    try:
        yield fleet, recorder
    finally:
        fleet.stop()


def tmux(server: libtmux.Server, *args: str) -> str:
    done = subprocess.run(
        ["tmux", "-L", str(server.socket_name), *args], capture_output=True, check=True
    )
    return done.stdout.decode("utf-8", "replace")


def capture_plain(server: libtmux.Server, pane_id: str) -> list[str]:
    """``capture-pane -p``: tmux's own text of the pane, trailing spaces stripped."""
    return [line.rstrip(" ") for line in tmux(server, "capture-pane", "-p", "-t", pane_id).split("\n")[:-1]]


def capture_screen(server: libtmux.Server, pane_id: str) -> PaneScreen:
    """A fresh PaneScreen painted from ``capture-pane -p -e -N`` and the pane's cursor."""
    raw = subprocess.run(
        ["tmux", "-L", str(server.socket_name), "capture-pane", "-p", "-e", "-N", "-t", pane_id],
        capture_output=True,
        check=True,
    ).stdout
    w, h, x, y, flag, alt = (
        int(v)
        for v in tmux(
            server,
            "display-message", "-p", "-t", pane_id,
            "#{pane_width} #{pane_height} #{cursor_x} #{cursor_y} #{cursor_flag} #{alternate_on}",
        ).split()
    )
    screen = PaneScreen(w, h)
    screen.seed(raw, x, y, alternate=bool(alt), cursor_visible=bool(flag))
    return screen


def cell_differences(mirror: PaneScreen, expected: PaneScreen) -> list[str]:
    """Human-readable cell differences between two screens (empty when they match).

    One difference is tmux's, not ours, and is allowed: cells erased with a background colour
    (``CSI 44m CSI K``) are shown in that colour by tmux's own clients (checked with a client
    attached through ``script``), but tmux 3.3a's ``capture-pane -e`` omits them beyond the
    last written cell. Such a cell is a blank with only ``bg`` set in the mirror and a plain
    blank in the capture.
    """
    diffs: list[str] = []
    if (mirror.width, mirror.height) != (expected.width, expected.height):
        return [f"size {mirror.width}x{mirror.height} != {expected.width}x{expected.height}"]
    with mirror.lock:
        rows = [list(mirror.row_cells(y)) for y in range(mirror.height)]
    for y in range(expected.height):
        for x, (got, want) in enumerate(zip(rows[y], expected.row_cells(y), strict=True)):
            if got != want and not _erased_background(got, want):
                diffs.append(f"({x},{y}): {got} != {want}")
    return diffs


def mirror_matches(fleet: TmuxFleet, server: libtmux.Server, pane_id: str) -> bool:
    screen = fleet.screen(pane_id)
    return screen is not None and screen.text_lines() == capture_plain(server, pane_id)


def process_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not: it has exited, only its status is left)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def wait_for(condition: Callable[[], bool], seconds: float = WAIT) -> None:
    retry_until(condition, seconds, interval=0.05)


def _erased_background(got: Cell, want: Cell) -> bool:
    return want == BLANK and got.data == " " and got.bg != "default" and got._replace(bg="default") == BLANK


QUICK_SHELL = "bash --norc --noprofile"
"""The shell of test panes: a login shell here runs `pyenv init`, seconds under load."""


def new_session(server: libtmux.Server, name: str, x: int = 80, y: int = 24, **kwargs: object) -> libtmux.Session:
    """A session whose panes (and every later pane of the server) start a quick shell."""
    kwargs.setdefault("window_command", QUICK_SHELL)
    session = server.new_session(session_name=name, x=x, y=y, **kwargs)  # type: ignore[arg-type]
    tmux(server, "set-option", "-g", "default-command", QUICK_SHELL)
    return session
