"""`FleetKeeper` on a real tmux server: what it reads, when it writes, where its failures go.

The agents' facts are given as Claude signals would report them (the real CLI's run of the
keeper inside ``nbs-tui --headless`` is tests/realclaude/test_fleet_memory_e2e.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import libtmux

from nbs_tui.claude.watcher import ClaudeFacts
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.review.agent_base import BASE_OPTION, AgentBase
from nbs_tui.core.sidecar.stuck_agents import Liveness
from nbs_tui.files.fleet_store import FleetStore
from nbs_tui.lifecycle.fleet_keeper import WORKER_BUS_OPTION, WORKER_OPTION, FleetKeeper
from nbs_tui.tmux.commands import TmuxServerCommands


def keeper_for(server: libtmux.Server, path: Path, facts: dict[str, ClaudeFacts], problems: list[str], acting: list[bool]) -> FleetKeeper:
    address = ServerAddress(socket_name=str(server.socket_name))
    store = FleetStore(path, report=problems.append)
    return FleetKeeper(
        TmuxServerCommands.for_server(address), store, "local", address,
        acting=lambda: acting[0], facts=lambda: facts, problem=lambda source, m: problems.append(f"{source}: {m}"),
        cmdline=lambda pid: ("claude", "-n", "api", "--model", "opus", "--permission-mode", "plan"),
    )  # fmt: skip


def test_only_while_acting_and_only_on_a_change_and_a_window_without_an_agent_is_not_the_fleets(
    server: libtmux.Server, tmp_path: Path
) -> None:
    session = server.new_session(session_name="crew", window_name="api", start_directory=str(tmp_path))
    pane = session.active_window.active_pane
    assert pane is not None and pane.pane_id is not None
    session.active_window.split(start_directory="/")  # a shell beside the agent: kept for the layout
    session.new_window(window_name="notes")  # no agent: not remembered
    server.cmd("set-option", "-p", "-t", pane.pane_id, WORKER_OPTION, "parser")
    facts = {pane.pane_id: ClaudeFacts(pane.pane_id, Liveness.RUNNING, pid=os.getpid(), session_id="s-1", project="/srv/api")}
    problems: list[str] = []
    acting = [False]
    path = tmp_path / "fleet.json"
    keeper = keeper_for(server, path, facts, problems, acting)
    assert not keeper.remember_now() and not path.exists()  # a viewer writes nothing
    acting[0] = True
    assert keeper.remember_now()
    assert not keeper.remember_now()  # nothing changed: no write
    data = json.loads(path.read_text())
    (window,) = data["windows"]
    assert window["session"] == "crew" and window["name"] == "api" and window["layout"]
    agent_pane, shell = window["panes"]
    assert agent_pane["folder"] == "/srv/api" and shell["folder"] == "/" and shell["agent"] is None
    agent = agent_pane["agent"]
    assert (agent["name"], agent["session_id"], agent["model"], agent["permission_mode"], agent["worker"]) == (
        "api", "s-1", "opus", "plan", "parser",
    )  # fmt: skip
    keeper.facts_changed(facts)  # the first news of a pane is a change; the same id again is not
    facts[pane.pane_id] = ClaudeFacts(pane.pane_id, Liveness.RUNNING, pid=os.getpid(), session_id="s-2", project="/srv/api")
    assert keeper.remember_now()
    assert json.loads(path.read_text())["windows"][0]["panes"][0]["agent"]["session_id"] == "s-2"
    assert problems == []


def test_a_memory_that_cannot_be_written_is_a_problem_and_a_server_gone_changes_nothing(
    server: libtmux.Server, tmp_path: Path
) -> None:
    session = server.new_session(session_name="crew", window_name="api")
    pane = session.active_window.active_pane
    assert pane is not None and pane.pane_id is not None
    facts = {pane.pane_id: ClaudeFacts(pane.pane_id, Liveness.RUNNING, pid=os.getpid(), session_id="s-1")}
    problems: list[str] = []
    blocked = tmp_path / "state"
    blocked.write_text("a file where the state folder should be")
    keeper = keeper_for(server, blocked / "fleet.json", facts, problems, [True])
    assert not keeper.remember_now()
    assert problems and "cannot write" in problems[0] and "not remembered" in problems[0]
    server.kill()
    problems.clear()
    assert not keeper.remember_now() and problems == []


def test_a_workers_end_is_announced_once_on_its_projects_bus(server: libtmux.Server, tmp_path: Path) -> None:
    events = tmp_path / ".nbs" / "events"
    events.mkdir(parents=True)
    session = server.new_session(session_name="crew", window_name="keep")
    window = session.new_window(window_name="parser", window_shell="cat")
    pane = window.active_pane
    assert pane is not None and pane.pane_id is not None
    server.cmd("set-option", "-p", "-t", pane.pane_id, WORKER_OPTION, "parser")
    server.cmd("set-option", "-p", "-t", pane.pane_id, WORKER_BUS_OPTION, str(events))
    problems: list[str] = []
    keeper = keeper_for(server, tmp_path / "fleet.json", {}, problems, [True])
    keeper.remember_now()
    assert list(events.glob("*.event")) == []  # alive: nothing said
    window.kill()
    keeper.remember_now()
    keeper.remember_now()
    (event,) = events.glob("*.event")
    text = event.read_text()
    assert "type: worker-died" in text and "source: parser" in text and "its tmux pane closed" in text
    assert "priority: high" in text and f"tmux pane {pane.pane_id}" in text
    assert problems == []


def _layout(body: str) -> str:
    """A tmux layout string with its checksum (tmux's ``layout_checksum``)."""
    csum = 0
    for ch in body:
        csum = (csum >> 1) + ((csum & 1) << 15)
        csum = (csum + ord(ch)) & 0xFFFF
    return f"{csum:04x},{body}"


COLUMNS_FIRST = _layout("81x25,0,0{40x25,0,0[40x12,0,0,1,40x12,0,13,2],40x25,41,0[40x12,41,0,3,40x12,41,13,4]}")
ROWS_FIRST = _layout("81x25,0,0[81x12,0,0{40x12,0,0,1,40x12,41,0,2},81x12,0,13{40x12,0,13,3,40x12,41,13,4}]")
"""Four 40x12 panes in a 2x2 grid, split by columns or by rows first: the panes keep their sizes and
indexes (no `PaneInfo` changes, so no ``fleet_changed``), only the window's layout differs."""


def test_a_layout_only_change_is_remembered_when_it_happens(server: libtmux.Server, tmp_path: Path) -> None:
    from libtmux.test.retry import retry_until

    from nbs_tui.runtime.runtime import Runtime, _Fanout
    from nbs_tui.tmux.fleet import TmuxFleet
    from tests.unit.test_runtime import Recorder, settings

    session = server.new_session(session_name="crew", window_name="api")
    window = session.active_window
    for _ in range(3):
        window.split()
    server.cmd("resize-window", "-t", "crew:api", "-x", "81", "-y", "25")
    server.cmd("select-layout", "-t", "crew:api", COLUMNS_FIRST)
    pane = window.panes[0]
    assert pane.pane_id is not None
    facts = {pane.pane_id: ClaudeFacts(pane.pane_id, Liveness.RUNNING, pid=os.getpid(), session_id="s-1", project="/srv/api")}
    problems: list[str] = []
    path = tmp_path / "fleet.json"
    keeper = keeper_for(server, path, facts, problems, [True])
    recorder = Recorder()
    runtime = Runtime(settings(tmp_path), recorder)
    runtime.keeper = keeper  # what `Runtime.build` makes for the acting process

    def remembered() -> str:
        return str(json.loads(path.read_text())["windows"][0]["layout"]) if path.exists() else ""

    def window_layout() -> str:
        return str(server.cmd("display-message", "-p", "-t", "crew:api", "#{window_layout}").stdout[0])

    fleet = TmuxFleet(ServerAddress(socket_name=str(server.socket_name)), listener=_Fanout(runtime), watch_all=False, stream_output=False)
    keeper.start()
    fleet.start()
    try:
        assert retry_until(lambda: remembered() == window_layout(), 15, raises=False), remembered()
        assert "{" in remembered()[:20]  # columns first
        fleets, writes = len(recorder.fleets), keeper.writes
        server.cmd("select-layout", "-t", "crew:api", ROWS_FIRST)
        assert "[" in window_layout()[:20]  # rows first now
        assert retry_until(lambda: remembered() == window_layout(), 15, raises=False), (remembered(), window_layout())
        assert keeper.writes == writes + 1
        assert len(recorder.fleets) == fleets  # no pane changed: the layout alone woke the keeper
    finally:
        fleet.stop()
        keeper.stop()
    assert not keeper.remember_now()  # on a change only: nothing new, nothing written
    assert problems == []


def test_the_base_new_left_on_the_pane_is_remembered_with_the_agent(server: libtmux.Server, tmp_path: Path) -> None:
    """``@nbs_base`` (issue 38): the commit and branch its changes are counted from, kept in the
    memory so a restore puts it back."""
    session = server.new_session(session_name="crew", window_name="api", start_directory=str(tmp_path))
    pane = session.active_window.active_pane
    assert pane is not None and pane.pane_id is not None
    server.cmd("set-option", "-p", "-t", pane.pane_id, BASE_OPTION, AgentBase("ab" * 20, "main").render())
    facts = {pane.pane_id: ClaudeFacts(pane.pane_id, Liveness.RUNNING, pid=os.getpid(), session_id="s-1")}
    problems: list[str] = []
    path = tmp_path / "fleet.json"
    assert keeper_for(server, path, facts, problems, [True]).remember_now()
    agent = json.loads(path.read_text())["windows"][0]["panes"][0]["agent"]
    assert agent["base"] == {"commit": "ab" * 20, "branch": "main"}
    memory = FleetStore(path).load()
    assert memory is not None and memory.windows[0].panes[0].agent is not None
    assert memory.windows[0].panes[0].agent.base == AgentBase("ab" * 20, "main")
    assert problems == []
