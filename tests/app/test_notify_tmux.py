"""Notifications reach the operator's terminal: the real dashboard runs in a pane of one tmux
server (the operator's) watching demo agents on another (the fleet's); ``pipe-pane`` records
every byte the dashboard writes to its terminal. When an agent the operator is not looking at
finishes a turn, the OSC 9, 777 and 99 sequences are there, wrapped for tmux passthrough; the
agent on show notifies nothing; ``allow-passthrough`` being off is said once; ``notify_command``
runs with its placeholders as single arguments."""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import libtmux
import pytest

from tests.app.test_actions import demo_agent, screen_text


def wait_until(condition: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.1)


@pytest.fixture
def operator_server() -> Iterator[libtmux.Server]:
    server = libtmux.Server(socket_name=f"nbs-operator-{uuid.uuid4().hex[:8]}")
    try:
        yield server
    finally:
        if server.is_alive():
            server.kill()


def finish_a_turn(session: libtmux.Session, pane: str) -> None:
    """Give the demo agent a prompt; it works a short turn and goes back to the idle prompt."""
    session.server.cmd("send-keys", "-t", pane, "-l", "Say hello")
    session.server.cmd("send-keys", "-t", pane, "Enter")


@pytest.mark.slow
def test_the_dashboard_writes_terminal_notifications_through_tmux(
    session: libtmux.Session, operator_server: libtmux.Server, tmp_path: Path
) -> None:
    shown = demo_agent(session, tmp_path, "idle", "shown")
    other = demo_agent(session, tmp_path, "idle", "other")
    session.server.cmd("kill-window", "-t", f"{session.session_id}:0")  # the agent on show comes first
    commands = tmp_path / "commands.txt"
    config = tmp_path / "config.toml"
    config.write_text(
        'notify_osc = "9,777,99"\nservice = "off"\npoll_disabled = true\n'
        f'hook_spool = "{tmp_path / "hooks.jsonl"}"\naction_log = "{tmp_path / "actions.log"}"\n'
        f"notify_command = {json.dumps(_sh_recorder(commands))}\n",
        encoding="utf-8",
    )
    captured = tmp_path / "dashboard.out"
    env = f"env HOME={shlex.quote(str(tmp_path))} XDG_STATE_HOME={shlex.quote(str(tmp_path / 'state'))}"
    argv = f"{env} {shlex.quote(sys.executable)} -m nbs_tui -L {session.server.socket_name} --config {config}"
    outer = operator_server.new_session("operator", x=160, y=48, window_command="sleep 600")
    pane = outer.active_pane
    assert pane is not None
    operator_server.cmd("pipe-pane", "-t", pane.pane_id, f"cat >> {shlex.quote(str(captured))}")
    operator_server.cmd("respawn-pane", "-k", "-t", pane.pane_id, argv)
    wait_until(lambda: "shown" in "\n".join(pane.capture_pane()), 30, "the dashboard shows the fleet")
    log = tmp_path / "state" / "nbs-tui" / "nbs-tui.log"
    wait_until(lambda: log.exists() and "allow-passthrough is off" in log.read_text(), 20, "the passthrough advice")

    finish_a_turn(session, shown)  # the pane on show: no notification
    wait_until(lambda: "✻ " in screen_text(session, shown).split("Say hello", 1)[-1], 30, "its turn over")
    finish_a_turn(session, other)
    wait_until(lambda: captured.exists() and b"finished" in captured.read_bytes(), 60, "a notification written")
    wait_until(lambda: commands.exists() and commands.read_text().strip(), 15, "notify_command ran")
    out = captured.read_bytes()
    title = b"nbs-tui: " + f"{session.name}:2.0 finished".encode()
    # wrapped for passthrough: DCS tmux; ... ST, with every ESC inside doubled
    assert b"\x1bPtmux;\x1b\x1b]9;" + title + b": done: idle at the prompt\x1b\x1b\\" in out
    assert b"\x1b\x1b]777;notify;" + title + b";done: idle at the prompt\x1b\x1b\\" in out
    assert b"\x1b\x1b]99;i=1:d=0:p=title;" + title + b"\x1b\x1b\\" in out
    # the shown agent: no notification (its name on the redrawn screen is not one)
    assert f"nbs-tui: {session.name}:1.0".encode() not in out
    assert commands.read_text().splitlines() == [f"finished|{session.name}:2.0|other|done: idle at the prompt"]


OSC = re.compile(rb"\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")


def bare_bells(out: bytes) -> int:
    """BEL characters that ring, not the ones ending an OSC sequence (a title, a colour query)."""
    return OSC.sub(b"", out).count(b"\x07")


@pytest.mark.slow
def test_with_a_terminal_it_cannot_tell_auto_rings_one_bell_and_writes_no_osc(
    session: libtmux.Session, operator_server: libtmux.Server, tmp_path: Path
) -> None:
    """``notify_osc = "auto"`` in a tmux pane whose client's terminal cannot be told (nobody
    attached, TERM is tmux's own): a finished turn rings the operator's terminal with one plain
    bell, unwrapped (tmux passes it on by itself), writes none of the three OSC sequences, and
    asks for no ``allow-passthrough``, which a bell does not need."""
    shown = demo_agent(session, tmp_path, "idle", "shown")
    other = demo_agent(session, tmp_path, "idle", "other")
    session.server.cmd("kill-window", "-t", f"{session.session_id}:0")  # the agent on show comes first
    config = tmp_path / "config.toml"
    config.write_text(
        'notify_osc = "auto"\nservice = "off"\npoll_disabled = true\nbell = false\n'
        f'hook_spool = "{tmp_path / "hooks.jsonl"}"\naction_log = "{tmp_path / "actions.log"}"\n',
        encoding="utf-8",
    )
    captured = tmp_path / "dashboard.out"
    env = f"env HOME={shlex.quote(str(tmp_path))} XDG_STATE_HOME={shlex.quote(str(tmp_path / 'state'))}"
    argv = f"{env} {shlex.quote(sys.executable)} -m nbs_tui -L {session.server.socket_name} --config {config}"
    outer = operator_server.new_session("operator", x=160, y=48, window_command="sleep 600")
    pane = outer.active_pane
    assert pane is not None
    operator_server.cmd("pipe-pane", "-t", pane.pane_id, f"cat >> {shlex.quote(str(captured))}")
    operator_server.cmd("respawn-pane", "-k", "-t", pane.pane_id, argv)
    wait_until(lambda: "shown" in "\n".join(pane.capture_pane()), 30, "the dashboard shows the fleet")

    finish_a_turn(session, shown)  # the pane on show: no notification, so no bell
    wait_until(lambda: "✻ " in screen_text(session, shown).split("Say hello", 1)[-1], 30, "its turn over")
    assert bare_bells(captured.read_bytes()) == 0
    finish_a_turn(session, other)
    wait_until(lambda: bare_bells(captured.read_bytes()) >= 1, 60, "the bell")
    out = captured.read_bytes()
    assert bare_bells(out) == 1
    assert not re.search(rb"\x1b\]+(?:9|777|99);", out), "an OSC notification was written"
    assert b"\x1bPtmux;" not in out  # nothing to pass through
    log = tmp_path / "state" / "nbs-tui" / "nbs-tui.log"
    assert "allow-passthrough" not in (log.read_text() if log.exists() else "")


def _sh_recorder(out: Path) -> str:
    """A notify_command that appends its placeholders, one line per run (no shell around it:
    sh is the program, the placeholders its arguments)."""
    script = f'printf "%s|%s|%s|%s\\n" "$1" "$2" "$3" "$4" >> {shlex.quote(str(out))}'
    return f"sh -c {shlex.quote(script)} sh {{event}} {{pane}} {{project}} {{reason}}"


def test_allow_passthrough_is_read_from_the_dashboards_own_pane(operator_server: libtmux.Server) -> None:
    from nbs_tui.notify.terminal_notifier import passthrough_problem
    from nbs_tui.tmux.own import passthrough_state

    session = operator_server.new_session("operator", window_command="sleep 600")
    pane = session.active_pane
    assert pane is not None and pane.pane_id is not None
    socket = operator_server.cmd("display-message", "-p", "#{socket_path},#{pid},0").stdout[0]
    inside = {"TMUX": socket, "TMUX_PANE": pane.pane_id, "PATH": os.environ.get("PATH", "")}
    assert passthrough_problem(passthrough_state(inside)) is not None  # tmux's default: off
    operator_server.cmd("set-option", "-g", "allow-passthrough", "on")
    assert passthrough_state(inside) not in (None, "0", "off")
    assert passthrough_problem(passthrough_state(inside)) is None
    assert passthrough_state({"PATH": os.environ.get("PATH", "")}) is None  # not inside tmux


def test_auto_chooses_by_the_terminal_of_the_dashboards_tmux_client(operator_server: libtmux.Server) -> None:
    """Inside tmux ``TERM`` is tmux's own; the attached client's terminal (the TERM ssh brought)
    names the protocol: rxvt speaks OSC 777 only, so only that one is sent."""
    import pty
    import signal

    from nbs_tui.core.notifications.notify_settings import parse_protocols
    from nbs_tui.tmux.own import client_terminal

    session = operator_server.new_session("operator", window_command="sleep 600")
    pane = session.active_pane
    assert pane is not None and pane.pane_id is not None
    socket = operator_server.cmd("display-message", "-p", "#{socket_path},#{pid},0").stdout[0]
    inside = {"TMUX": socket, "TMUX_PANE": pane.pane_id, "PATH": os.environ.get("PATH", "")}
    assert client_terminal(inside) is None  # nobody attached
    child, _fd = pty.fork()
    if child == 0:  # an operator's terminal: a tmux client in a pty, TERM=rxvt
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
        os.execvpe("tmux", ["tmux", "-L", str(operator_server.socket_name), "attach", "-t", "operator"], {**env, "TERM": "rxvt"})
    try:
        wait_until(lambda: operator_server.cmd("list-clients").stdout, 10, "the client attached")
        assert client_terminal(inside) == "rxvt"
        assert parse_protocols("auto", {"TERM": "rxvt"}) == ("777",)
    finally:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
