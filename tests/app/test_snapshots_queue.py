"""The queue view (``4``) at 160x48 and in the phone layout (50x30), on the snapshot fleet
(tests/app/test_snapshots.py) with a queue file written before the app starts: tasks with an
agent (running, waiting on the operator), queued ones (by priority, one failed once, a worker
task that starts its own agent), and ended ones (done, failed, cancelled). Ages are against the
frozen wall clock."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path

import libtmux
import pytest
from textual.pilot import Pilot

from nbs_tui.app import NbsApp
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.queue.records import (
    Record,
    TaskAdded,
    TaskCancelled,
    TaskDone,
    TaskFailed,
    TaskHanded,
    TaskHanding,
    TaskNeeds,
)
from nbs_tui.files.queue_store import QueueStore, queue_path
from tests.app.helpers import static_text, wait_for
from tests.app.test_snapshots import FROZEN_WALL, SIZE, _settled, frozen_app
from tests.app.test_snapshots_phone import PHONE


def queue_records(pane: Callable[[str], str]) -> list[Record]:
    """The queue shown: ``pane(window)`` is the pane id of the snapshot fleet's window."""
    ago = lambda minutes: FROZEN_WALL - minutes * 60  # noqa: E731
    added = [
        TaskAdded(task="1", at=ago(42), text="Profile the mirror's frame and cut its cost", folder="/work/api-server"),
        TaskAdded(task="2", at=ago(35), text="Parse the control inbox's new line format"),
        TaskAdded(task="3", at=ago(30), text="Retry flaky fetches with a backoff", agents="fetch*"),
        TaskAdded(task="4", at=ago(28), text="Migrate the docs site to the new theme"),
        TaskAdded(task="5", at=ago(20), text="Bump the pinned Claude Code version"),
        TaskAdded(task="6", at=ago(12), worker="reviewer", folder="/work/web-ui"),
        TaskAdded(task="7", at=ago(9), text="Write the queue's section of the README", priority=2),
        TaskAdded(task="8", at=ago(6), text="Try the old cache idea again"),
        TaskAdded(task="9", at=ago(2), text="Check the phone layout at 40 columns"),
    ]

    def handed(task: str, window: str, minutes: float) -> list[Record]:
        return [TaskHanding(task=task, at=ago(minutes), pane=pane(window)), TaskHanded(task=task, at=ago(minutes), pane=pane(window))]

    return [
        *added,
        *handed("3", "fetch", 29),
        TaskDone(task="3", at=ago(18), message="All 14 fetch tests pass; retries back off from 1 s to 30 s."),
        *handed("1", "mirror", 17),
        *handed("2", "inbox", 15),
        TaskNeeds(task="2", at=ago(1), why="permission prompt"),
        *handed("4", "docs", 14),
        TaskFailed(task="4", at=ago(13), reason="usage limit", final=True),
        *handed("5", "team", 11),
        TaskFailed(task="5", at=ago(10), reason="the agent exited"),
        TaskCancelled(task="8", at=ago(4)),
    ]


@pytest.fixture
def queue_app(server: libtmux.Server, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[NbsApp]:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    for app in frozen_app(server, monkeypatch, FROZEN_WALL):  # the fleet started, the app built
        write_queue(server)
        yield app


def write_queue(server: libtmux.Server) -> None:
    panes = {w.window_name: str(w.active_pane.pane_id) for s in server.sessions for w in s.windows if w.active_pane}
    store = QueueStore(queue_path("local", ServerAddress(socket_name=server.socket_name)))
    for record in queue_records(panes.__getitem__):
        store.append(record)


async def _queue_shown(pilot: Pilot[object], phone: bool = False) -> None:
    await _settled(pilot, mirror=not phone)
    app = pilot.app
    assert isinstance(app, NbsApp)
    await pilot.press("4")
    await wait_for(pilot, lambda: app.dashboard.queue_view.table.row_count == 9, what="the queue's 9 tasks")
    await wait_for(pilot, lambda: "inbox" in app.dashboard.queue_view.names.values(), what="agents named")
    await pilot.pause(0.3)


def test_queue_view(queue_app: NbsApp, snap_compare: Callable[..., bool]) -> None:
    assert snap_compare(queue_app, terminal_size=SIZE, run_before=_queue_shown)


def test_phone_queue_view(queue_app: NbsApp, snap_compare: Callable[..., bool]) -> None:
    async def run_before(pilot: Pilot[object]) -> None:
        await _queue_shown(pilot, phone=True)
        assert queue_app.screen.has_class("-narrow")

    assert snap_compare(queue_app, terminal_size=PHONE, run_before=run_before)


def test_phone_dashboard_shows_the_queue_in_a_line_a_tap_opens_and_the_agents_task(queue_app: NbsApp, snap_compare: Callable[..., bool]) -> None:
    async def run_before(pilot: Pilot[object]) -> None:
        await _settled(pilot, mirror=False)
        strip = queue_app.dashboard.queue_strip
        await wait_for(pilot, lambda: strip.display and "4 queued" in str(strip.render()), what="the queue's line")
        # the selected agent (alpha:0.0, the mirror) holds task 1: its details say so
        await wait_for(pilot, lambda: "running  Profile" in static_text(queue_app.dashboard.detail, 200), what="the task in the details")
        # A loaded machine's first tap can land while the layout still moves (the details just
        # grew a line): tap again, a few times at most, until the view opens.
        for _ in range(5):
            await pilot.click("#queue-strip")
            with contextlib.suppress(AssertionError):
                await wait_for(pilot, lambda: queue_app.dashboard.view == "queue", 3.0, what="a tap opens the queue view")
                break
        assert queue_app.dashboard.view == "queue", "five taps on the queue's line did not open the queue view"
        await pilot.press("1")
        await wait_for(pilot, lambda: queue_app.dashboard.view == "dashboard", what="back to the list")
        await pilot.pause(0.3)

    assert snap_compare(queue_app, terminal_size=PHONE, run_before=run_before)
