"""`OperatorController` without Textual: a plain view that records what it was asked to show."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import libtmux
import pytest

from nbs_tui.config import Settings
from nbs_tui.core.fleet.agent_spec import NewAgent
from nbs_tui.core.fleet.model import AgentState, ServerAddress
from nbs_tui.core.fleet.pane_state import PaneState, PaneStatus
from nbs_tui.operator.action_log import ActionRecord, Outcome
from nbs_tui.operator.operator_controller import OperatorController, report_text
from nbs_tui.runtime.contract import RuntimeOptions
from nbs_tui.runtime.runtime import Runtime
from nbs_tui.tmux.port import FleetListener
from tests.app.fakes import FakeFleet, pane_info
from tests.unit.test_runtime import Recorder


class View:
    """An `OperatorView` that keeps every notification and runs UI callbacks at once."""

    def __init__(self) -> None:
        self.notes: list[tuple[str, str, str]] = []
        self.bells = 0
        self.lock = threading.Lock()

    def notify_operator(self, text: str, title: str, severity: str, timeout: float) -> None:
        with self.lock:
            self.notes.append((text, title, severity))

    def on_ui(self, callback: Callable[[], None]) -> None:
        callback()

    def bell(self) -> None:
        self.bells += 1

    def wait_for(self, title: str, timeout: float = 10.0) -> tuple[str, str, str]:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                for note in self.notes:
                    if note[1] == title:
                        return note
            time.sleep(0.02)
        raise AssertionError(f"no {title!r} notification in {self.notes}")


PANES = [pane_info("%1", 0), pane_info("%2", 1), pane_info("%3", 2, agent=False)]


@pytest.fixture
def rig(tmp_path: Path) -> Iterator[tuple[OperatorController, View, PaneState, Runtime]]:
    settings = Settings(action_log=tmp_path / "actions.log", bell=True, plan_policy="off")

    def factory(listener: FleetListener) -> FakeFleet:
        return FakeFleet(listener, PANES)

    runtime = Runtime(settings, Recorder(), RuntimeOptions(fleet_factory=factory, control_plane=False, claude=False, sidecar=False))
    state = PaneState()
    state.set_fleet(PANES)
    view = View()
    now = [100.0]
    controller = OperatorController(settings, state, runtime, view, clock=lambda: now[0])
    controller.start()
    yield controller, view, state, runtime
    controller.stop()
    runtime.stop()
    assert "nbs-operator" not in {t.name for t in threading.enumerate()}


def test_nothing_selected_or_no_fleet_is_said_not_done(rig: tuple[OperatorController, View, PaneState, Runtime]) -> None:
    controller, view, _state, _runtime = rig
    assert controller.ready(None) is None
    assert controller.ready(PANES[0]) is None, "the runtime was never built: no fleet"
    controller.force_poll_idle()
    assert [text for text, _, _ in view.notes] == ["No pane selected.", "Not connected to tmux.", "Not connected to tmux."]


def test_marks(rig: tuple[OperatorController, View, PaneState, Runtime]) -> None:
    controller, _view, _state, _runtime = rig
    assert controller.toggle_mark(PANES[1]) == 1
    assert controller.toggle_mark(PANES[0]) == 2
    assert [p.pane_id for p in controller.marked_panes()] == ["%1", "%2"], "in fleet order"
    assert controller.toggle_mark(PANES[1]) == 1
    controller.clear_marks()
    assert controller.marked_panes() == []


def test_needs_you_announces_newcomers_once_and_cycles(rig: tuple[OperatorController, View, PaneState, Runtime]) -> None:
    controller, view, state, _runtime = rig
    state.set_sidecar_statuses(
        [PaneStatus("%1", AgentState.PERMISSION), PaneStatus("%2", AgentState.PLAN), PaneStatus("%3", AgentState.PERMISSION)],
        100.0, 1000.0,
    )
    entries = controller.needs_you_tick()
    assert {e.pane_id for e in entries} == {"%1", "%2"}, "a shell pane never needs you; plans wait (policy off)"
    assert view.bells == 1 and view.notes[-1][1] == "Needs you"
    controller.needs_you_tick()
    assert view.bells == 1, "announced once"
    first = controller.next_needs_you(None)
    second = controller.next_needs_you("%9")
    assert first is not None and second is not None and {first.pane_id, second.pane_id} == {"%1", "%2"}
    state.set_sidecar_statuses([PaneStatus("%1", AgentState.WORKING), PaneStatus("%2", AgentState.WORKING)], 101.0, 1001.0)
    assert controller.needs_you_tick() == []
    assert controller.next_needs_you(None) is None and view.notes[-1][0] == "Nobody is waiting on you."


def test_an_action_that_raises_is_a_problem(
    rig: tuple[OperatorController, View, PaneState, Runtime], caplog: pytest.LogCaptureFixture
) -> None:
    """The runtime's one problem sink: a log line and the listener's ``problem`` (the app's
    problems screen and notification, `tests/app/test_problem_route.py`)."""
    controller, view, _state, runtime = rig
    listener = runtime.listener
    assert isinstance(listener, Recorder)

    def broken() -> None:
        raise OSError("disk full")

    with caplog.at_level(logging.WARNING, logger="nbs_tui.problems"):
        controller.submit(broken)
        deadline = time.monotonic() + 10
        while not listener.problems and time.monotonic() < deadline:
            time.sleep(0.02)
    assert listener.problems == [("operator action", "OSError: disk full")]
    assert "operator action: OSError: disk full" in [r.getMessage() for r in caplog.records if r.name == "nbs_tui.problems"]
    assert view.notes == [], "not a second route beside the problem"


def test_a_lifecycle_action_that_raises_unexpectedly_is_a_problem(
    rig: tuple[OperatorController, View, PaneState, Runtime], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A start, stop or restore runs on a thread of its own; what it did not expect (here the
    folder check failing with OSError) reaches the problem sink as the action thread's does,
    instead of ending the thread unsaid."""
    controller, view, _state, runtime = rig
    listener = runtime.listener
    assert isinstance(listener, Recorder)

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("nbs_tui.lifecycle.host.prepare_local", broken)
    controller.lifecycle.start_agent(NewAgent(directory=str(tmp_path)))
    deadline = time.monotonic() + 10
    while not listener.problems and time.monotonic() < deadline:
        time.sleep(0.02)
    assert listener.problems == [("new agent", "OSError: disk full")]
    assert view.notes == [], "one route: the problem, not a notification beside it"


def test_a_desktop_notification_that_fails_is_a_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A real ``notify-send`` (a script first on PATH) that cannot reach a desktop session: its
    last words are a ``notify`` problem (the log line and the listener), not swallowed."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "notify-send"
    fake.write_text("#!/bin/sh\necho 'Cannot autolaunch D-Bus without X11 $DISPLAY' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    settings = Settings(action_log=tmp_path / "actions.log", bell=False, desktop_notify=True)
    listener = Recorder()
    runtime = Runtime(settings, listener, RuntimeOptions(fleet_factory=lambda lst: FakeFleet(lst, PANES),
                                                         control_plane=False, claude=False, sidecar=False))  # fmt: skip
    state = PaneState()
    state.set_fleet(PANES)
    controller = OperatorController(settings, state, runtime, View(), clock=lambda: 100.0)
    controller.start()
    try:
        with caplog.at_level(logging.WARNING, logger="nbs_tui.problems"):
            state.set_sidecar_statuses([PaneStatus("%1", AgentState.PERMISSION)], 100.0, 1000.0)
            controller.needs_you_tick()
            deadline = time.monotonic() + 10
            while not listener.problems and time.monotonic() < deadline:
                time.sleep(0.02)
    finally:
        controller.stop()
        runtime.stop()
    said = "notify-send exited 1: Cannot autolaunch D-Bus without X11 $DISPLAY"
    assert listener.problems == [("notify", said)]
    assert f"notify: {said}" in [r.getMessage() for r in caplog.records if r.name == "nbs_tui.problems"]


def test_text_goes_to_the_pane_chosen_and_never_to_its_replacement(tmp_path: Path, server: libtmux.Server) -> None:
    """Real tmux answers the pane check; the fake fleet records what would be typed."""
    session = server.new_session(session_name="ctl", window_command="sleep 600")
    pane = session.active_window.active_pane
    assert pane is not None and pane.pane_id is not None and pane.pane_pid is not None
    chosen = replace(PANES[0], pane_id=pane.pane_id, pid=int(pane.pane_pid))
    settings = Settings(server=ServerAddress(socket_name=server.socket_name), action_log=tmp_path / "actions.log")
    fleets: list[FakeFleet] = []

    def factory(listener: FleetListener) -> FakeFleet:
        fleets.append(FakeFleet(listener, [chosen]))
        return fleets[-1]

    runtime = Runtime(settings, Recorder(), RuntimeOptions(fleet_factory=factory, control_plane=False, claude=False, sidecar=False))
    runtime.build()
    view = View()
    controller = OperatorController(settings, PaneState(), runtime, view, clock=time.monotonic)
    controller.start()
    try:
        controller.send_text(chosen, "hello", enter=False)
        assert view.wait_for("Send")[2] == "information"
        assert fleets[0].sent == [(pane.pane_id, "hello")]
        view.notes.clear()
        controller.send_text(replace(chosen, pid=chosen.pid + 1), "again", enter=False)
        text, _title, severity = view.wait_for("Send")
        assert "was replaced" in text and severity == "warning"
        assert fleets[0].sent == [(pane.pane_id, "hello")], "nothing typed into the replacement"
        records = [r for r in controller.action_log.tail() if isinstance(r, ActionRecord)]
        assert [r.outcome for r in records] == [Outcome.SENT, Outcome.SKIPPED]
    finally:
        controller.stop()
        runtime.stop()


def test_report_text() -> None:
    from nbs_tui.operator.pane_actions import ActionResult

    sent = ActionResult("%1", "a:0.0", "text", "hi", Outcome.SENT)
    skipped = ActionResult("%2", "a:1.0", "text", "hi", Outcome.SKIPPED, "pane is gone")
    failed = ActionResult("%2", "a:1.0", "text", "hi", Outcome.FAILED, "tmux said no")
    assert report_text([]) == ("nothing to do", "information")
    assert report_text([sent]) == ("a:0.0: text sent", "information")
    assert report_text([skipped])[1] == "warning" and report_text([failed])[1] == "error"
    text, severity = report_text([sent, skipped])
    assert text.startswith("1 of 2 done") and "pane is gone" in text and severity == "warning"
