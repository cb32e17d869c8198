"""The dashboard's notifications on a fake fleet: what reaches the terminal writer, for which
pane, muted from the command palette, and a failing ``notify_command`` shown as a problem."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from textual.app import SystemCommand
from textual.notifications import SeverityLevel

from nbs_tui.app import NbsApp, create_app
from nbs_tui.config import Settings
from nbs_tui.core.fleet.model import AgentState
from nbs_tui.dashboard.messages import PaneStatus, PaneStatusChanged
from nbs_tui.tmux.port import FleetListener
from tests.app.fakes import FakeFleet, pane_info
from tests.app.helpers import wait_for

PANES = [pane_info("%1", 0), pane_info("%2", 1)]


def _app(tmp_path: Path, **settings: object) -> NbsApp:
    def factory(listener: FleetListener) -> FakeFleet:
        return FakeFleet(listener, PANES)

    base = Settings(**{"notify_osc": "9", "action_log": tmp_path / "actions.log", **settings})  # type: ignore[arg-type]
    return create_app(base, factory, control_plane=False, sidecar=False, claude=False)


def _state(app: NbsApp, pane: str, state: AgentState) -> None:
    app.post_message(PaneStatusChanged(pane, PaneStatus(pane, state, reason="screen")))


def _palette(app: NbsApp, title: str) -> SystemCommand:
    return next(c for c in app.get_system_commands(app.screen) if c.title == title)


async def test_finished_elsewhere_is_written_muted_from_the_palette(tmp_path: Path) -> None:
    app = _app(tmp_path, notify_repeat=0.01)  # repeats allowed: only the mute holds the second back
    written: list[str] = []
    async with app.run_test(size=(160, 48)) as pilot:
        app.dashboard.notifications.notifier.write = written.append
        await wait_for(pilot, lambda: app.dashboard.selected_id == "%1", what="the first pane selected")
        for pane in ("%1", "%2"):
            _state(app, pane, AgentState.WORKING)
        decider = app.operator.notifications
        await wait_for(pilot, lambda: decider.seen("%1") == decider.seen("%2") == "working", what="both seen")
        for pane in ("%1", "%2"):
            _state(app, pane, AgentState.IDLE)
        await wait_for(pilot, lambda: written, what="a notification written")
        await pilot.pause(0.6)  # another needs-you tick: nothing more
        assert written == ["\x1b]9;nbs-tui: fleet:1.0 finished: done: idle at the prompt\x1b\\"]  # %2, not %1 on show

        _palette(app, "Mute finished notifications").callback()
        assert _palette(app, "Unmute finished notifications")
        _state(app, "%2", AgentState.WORKING)
        await wait_for(pilot, lambda: decider.seen("%2") == "working", what="working seen")
        _state(app, "%2", AgentState.IDLE)
        await wait_for(pilot, lambda: decider.seen("%2") == "idle", what="idle seen")
        assert len(written) == 1


async def test_a_failing_notify_command_is_a_problem(tmp_path: Path) -> None:
    command = f"{sys.executable} -c 'import sys; print(\"no route to ntfy\", file=sys.stderr); sys.exit(3)' {{event}}"
    app = _app(tmp_path, notify_command=command, notify_osc="off")
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: app.dashboard.selected_id == "%1", what="the first pane selected")
        _state(app, "%2", AgentState.WORKING)
        await wait_for(pilot, lambda: app.operator.notifications.seen("%2") == "working", what="seen")
        _state(app, "%2", AgentState.QUESTION)
        await wait_for(pilot, lambda: len(app.problems), timeout=20, what="the command's failure")
        [entry] = app.problems.entries()
        assert entry.source == "notify" and "exited 3: no route to ntfy" in entry.message


async def test_an_ended_agent_and_another_process_s_stop_are_toasts_the_dashboard_s_own_stop_is_not(
    tmp_path: Path,
) -> None:
    import threading

    from nbs_tui.sidecar.events import AgentEnded, AgentStopped

    app = _app(tmp_path)
    shown: list[tuple[str, str, str]] = []
    notify = app.notify

    def noting(message: str, *, title: str = "", severity: SeverityLevel = "information", **options: Any) -> None:
        shown.append((title, message, severity))
        notify(message, title=title, severity=severity, **options)

    app.notify = noting  # type: ignore[method-assign]
    async with app.run_test(size=(160, 48)) as pilot:
        news = [
            AgentEnded("%1", 1.0, "its tmux pane is gone", liveness="gone"),
            AgentStopped("%2", 2.0, "Ctrl-C", result="sent", target="agents:1.0"),  # this process's own
            AgentStopped("%2", 3.0, "/exit", by="box pid 7", result="failed", target="agents:1.0"),
        ]

        def tell() -> None:  # the runtime's listener is called on a backend's thread
            for event in news:
                app.bridge.sidecar_event(event)

        told = threading.Thread(target=tell)
        told.start()
        told.join()
        await wait_for(pilot, lambda: len(shown) >= 2, what="two toasts")
        await pilot.pause(0.2)  # a third would have come with the others
    assert shown == [
        ("Agent ended", "%1: its tmux pane is gone", "warning"),
        ("Agent stop", "agents:1.0 (%2): /exit\nby box pid 7", "warning"),
    ]
