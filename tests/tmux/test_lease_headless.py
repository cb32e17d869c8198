"""The lease end to end: real ``nbs-tui --headless`` processes on a private server with a fake
``claude``: one acts, the other only watches; a clean stop hands over at once; a poll typed by a
holder that died before Enter is erased by the next one, and an operator's text never is."""

from __future__ import annotations

import os
from pathlib import Path

import libtmux
from libtmux.test.retry import retry_until

from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.sidecar.lease_rules import LEASE_OPTION
from nbs_tui.sidecar.heartbeat import LeaseHeartbeat
from nbs_tui.sidecar.pane_options import SidecarSwitches, typing_guard
from nbs_tui.tmux.commands import TmuxServerCommands
from tests.headless_proc import Headless
from tests.tmux.test_sidecar_runner import write_fake_claude


class LeaseHeadless(Headless):
    """``nbs-tui --headless`` on ``server`` (polls every 2 s), with its own home under ``home``;
    what it says about the lease and the polls it typed."""

    def __init__(self, server: libtmux.Server, home: Path) -> None:
        env = {
            **os.environ,
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_STATE_HOME": str(home / ".state"),
        }
        super().__init__(["-L", str(server.socket_name), "--poll-interval", "2"], env=env)

    def typed(self, pane_id: str, *, relayed: bool = False) -> int:
        """Polls this process typed itself, or (``relayed``) the holder's it was told of."""
        return sum(1 for e in self.find("poll", pane=pane_id, result="typed") if bool(e.get("by")) == relayed)

    def acting(self) -> bool:
        leases = self.find("lease")
        return bool(leases) and leases[-1]["acting"]


def agent(session: libtmux.Session, tmp_path: Path, name: str, mode: str = "idle") -> tuple[str, Path]:
    fake = write_fake_claude(tmp_path / "bin" / "claude")
    log = tmp_path / f"{name}.log"
    window = session.new_window(window_name=name, window_shell=f"{fake} {mode} {log}", attach=False)
    pane = window.active_pane
    assert pane is not None and pane.pane_id is not None
    assert retry_until(lambda: log.exists() and "READY" in log.read_text(), 10, raises=False)
    return pane.pane_id, log


def submits(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if line.startswith("SUBMIT")]


def test_two_headless_one_acts_and_a_clean_stop_hands_over(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path
) -> None:
    pane_id, log = agent(session, tmp_path, "idle")
    with LeaseHeadless(server, tmp_path / "h1") as first:
        assert retry_until(first.acting, 20, raises=False), first.events
        with LeaseHeadless(server, tmp_path / "h2") as second:  # once the first holds the lease
            assert retry_until(lambda: len(submits(log)) >= 2, 60, raises=False), log.read_text()
            assert retry_until(lambda: second.has("lease"), 10, raises=False)
            assert not second.acting() and second.typed(pane_id) == 0
            assert first.typed(pane_id) >= 2 and first.typed(pane_id, relayed=True) == 0
            assert retry_until(lambda: second.typed(pane_id, relayed=True) >= 1, 10, raises=False), second.events
            # the watcher sees the same states
            assert second.has("state", pane=pane_id)
            assert first.stop() == 0
            # released on a clean stop: the other acts at once, not a ttl later
            assert retry_until(second.acting, 5, raises=False), second.events
            before = len(submits(log))
            assert retry_until(lambda: len(submits(log)) > before, 40, raises=False)
            assert second.typed(pane_id) >= 1
    assert second.returncode == 0, second.stderr
    assert set(submits(log)) == {"SUBMIT /nbs-poll"}, submits(log)
    assert TmuxServerCommands.for_server(ServerAddress(socket_name=str(server.socket_name))).run(
        "display-message", "-p", f"#{{{LEASE_OPTION}}}"
    ).text == "\n"


def test_next_holder_erases_a_poll_left_unsubmitted_but_never_the_operators_text(
    session: libtmux.Session, server: libtmux.Server, tmp_path: Path
) -> None:
    left, left_log = agent(session, tmp_path, "left")
    typed_on, typed_on_log = agent(session, tmp_path, "typedon")
    commands = TmuxServerCommands.for_server(ServerAddress(socket_name=str(server.socket_name)))
    switches = SidecarSwitches(commands)
    dead = LeaseHeartbeat(commands)
    dead.tick()
    assert dead.holding
    assert commands.type_text(left, "/nbs-poll", guard=typing_guard(dead.token, left, "/nbs-poll"))
    assert commands.type_text(typed_on, "/nbs-poll", guard=typing_guard(dead.token, typed_on, "/nbs-poll"))
    server.cmd("send-keys", "-t", typed_on, "-l", " and my words")  # the operator typed on
    assert retry_until(lambda: "and my words" in capture(commands, typed_on), 5, raises=False)
    dead.stop(release=False)  # dies: no release, no submit

    with LeaseHeadless(server, tmp_path / "h") as headless:
        assert retry_until(lambda: headless.has("poll", pane=left, result="recovered"), 30, raises=False), headless.events
        # then it polls normally
        assert retry_until(lambda: len(submits(left_log)) >= 1, 30, raises=False)
        _, panes = switches.read()
        assert panes[typed_on].inflight is None  # the mark is dropped ...
        assert "/nbs-poll and my words" in capture(commands, typed_on)  # ... the text left
    assert headless.returncode == 0, headless.stderr
    assert set(submits(left_log)) == {"SUBMIT /nbs-poll"}, submits(left_log)
    assert submits(typed_on_log) == []


def capture(commands: TmuxServerCommands, pane: str) -> str:
    return commands.run("capture-pane", "-p", "-t", pane).text
