"""Backends that fail for real, seen in ``--headless``'s output and in the log file.

The CLI runs as a process on a private tmux server with its home in a temporary folder: the hook
spool is a directory where the file should be (unreadable, also for root), the control plane's
listener raises, and the ``tmux -C`` control client is killed. Each must come out as an
``{"event": "error", "source": ..., "message": ...}`` line and as a line of the log file.
"""

from __future__ import annotations

import io
import json
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import libtmux
import pytest
from libtmux.test.retry import retry_until

from nbs_tui.config import Settings
from nbs_tui.housekeeping import logs
from nbs_tui.runtime.headless import run_headless
from tests.headless_proc import Headless
from tests.tmux.fleet_helpers import address, tmux


def control_client_pids(server: libtmux.Server, *, output: bool = False) -> list[int]:
    """The control clients; ``output``: only those that get pane output (not a dashboard's
    ``no-output`` guard client)."""
    out = tmux(server, "list-clients", "-F", "#{client_pid} #{client_control_mode} #{client_flags}")
    return [
        int(pid)
        for pid, control, flags in (line.split() for line in out.splitlines() if line.strip())
        if control == "1" and not (output and "no-output" in flags)
    ]


def errors(events: list[dict[str, Any]], source: str, needle: str) -> list[dict[str, Any]]:
    return [e for e in events if e["event"] == "error" and e.get("source") == source and needle in e["message"]]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home whose hook spool is a directory: reading it fails, whoever we are."""
    home = tmp_path / "home"
    spool = home / ".local" / "state" / "nbs-tui" / "hooks.jsonl"
    spool.mkdir(parents=True)
    (spool / "not-a-spool").write_text("a directory's size is not zero")
    return home


def test_headless_reports_an_unreadable_spool_and_a_killed_control_client(
    session: libtmux.Session, server: libtmux.Server, home: Path
) -> None:
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"), "NBS_POLL_DISABLE": "1"}
    env.pop("XDG_STATE_HOME", None)
    with Headless(["-L", str(server.socket_name)], env=env) as run:
        events = run.events
        assert retry_until(lambda: bool(errors(events, "Claude Code signals", "hooks.jsonl")), seconds=20, raises=False), events
        # One control client per session, all attached: taken after the first only, the list
        # came back longer than it was (seen under load) and "reconnected" never matched.
        sessions = len(tmux(server, "list-sessions", "-F", "#{session_id}").split())

        def all_attached() -> bool:
            return len(control_client_pids(server)) == sessions

        assert retry_until(all_attached, seconds=20, raises=False), (control_client_pids(server), sessions)
        before = control_client_pids(server)
        os.kill(before[0], signal.SIGKILL)
        assert retry_until(lambda: bool(errors(events, "tmux", "control client")), seconds=20, raises=False), events

        def back() -> bool:
            now = control_client_pids(server)
            return before[0] not in now and len(now) == sessions

        assert retry_until(back, seconds=20, raises=False), (
            f"the fleet did not reconnect on its own: {before} before, {control_client_pids(server)} now"
        )
    assert run.returncode == 0, run.stderr
    [spool] = errors(events, "Claude Code signals", "hooks.jsonl")
    assert "cannot read" in spool["message"] and "directory" in spool["message"], spool
    assert len(errors(events, "Claude Code signals", "hooks.jsonl")) == 1, "reported once, not every 0.2 s"
    log = (home / ".local" / "state" / "nbs-tui" / "nbs-tui.log").read_text()
    assert f"Claude Code signals: {spool['message']}" in log
    assert f"tmux: {errors(events, 'tmux', 'control client')[0]['message']}" in log


class RaisingOut(io.StringIO):
    """Headless's stdout, failing on the control plane's events: its listener raises."""

    def write(self, text: str) -> int:
        if '"event": "control-' in text or '"event": "registry-' in text:
            raise OSError(28, "No space left on device")
        return super().write(text)


@pytest.fixture
def log_file(tmp_path: Path) -> Iterator[Path]:
    path = logs.install(tmp_path / "state" / "nbs-tui.log")
    yield path
    logs.uninstall()


def test_headless_reports_a_control_plane_listener_that_raises(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path, log_file: Path
) -> None:
    project = tmp_path / "project"
    (project / ".nbs").mkdir(parents=True)
    settings = Settings(
        server=address(server), projects=(project,), poll_disabled=True,
        hook_spool=tmp_path / "hooks.jsonl", claude_home=tmp_path / "claude", action_log=tmp_path / "actions.log",
    )
    out = RaisingOut()
    stop = threading.Event()
    runner = threading.Thread(target=run_headless, args=(settings,), kwargs={"out": out, "stop": stop})
    runner.start()
    try:
        def reported() -> list[dict[str, Any]]:
            lines = [json.loads(line) for line in out.getvalue().splitlines()]
            return errors(lines, "control plane", "listener failed")

        assert retry_until(lambda: bool(reported()), seconds=20, raises=False), out.getvalue()
    finally:
        stop.set()
        runner.join(20)
    [first, *_] = reported()
    assert "No space left on device" in first["message"]
    assert f"control plane: {first['message']}" in log_file.read_text()
