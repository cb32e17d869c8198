"""The queue view (``4``) on a real tmux server: add, cancel and reorder from the dashboard append
real records to the server's queue file (read back by a fresh store, as another process would),
and a record another process appends shows up in the view. The feeder is not involved: these
are the dashboard's own records (docs/queue.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import libtmux
import pytest
from textual.coordinate import Coordinate
from textual.pilot import Pilot
from textual.widgets import Input, Static, TextArea

from nbs_tui.app import NbsApp, create_app
from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.core.queue.records import (
    QueuePaused,
    QueueResumed,
    TaskAdded,
    TaskCancelled,
    TaskHanded,
    TaskHanding,
    TaskMoved,
    parse_line,
)
from nbs_tui.core.queue.task_states import TaskState
from nbs_tui.files.queue_store import QueueStore, queue_path
from nbs_tui.widgets.add_task_form import AddTaskScreen
from nbs_tui.widgets.confirm_screen import ConfirmScreen
from tests.app.helpers import static_text, wait_for
from tests.app.test_actions import SIZE, make_app, settings


@pytest.fixture
def queue_file(server: libtmux.Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The server's queue file, under a state folder of this test's own."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    return queue_path("local", ServerAddress(socket_name=server.socket_name))


def records(path: Path) -> list[object]:
    return [parse_line(line) for line in path.read_bytes().splitlines(keepends=True)]


def add_tasks(path: Path, *texts: str) -> None:
    store = QueueStore(path)
    for text in texts:
        store.append(TaskAdded(task=str(store.refresh().last_id() + 1), at=1000.0, text=text))


def shown_ids(app: NbsApp) -> list[str]:
    table = app.dashboard.queue_view.table
    return [str(table.coordinate_to_cell_key(Coordinate(row, 0)).row_key.value) for row in range(table.row_count)]


async def open_queue(app: NbsApp, pilot: Pilot[int], tasks: int) -> None:
    await pilot.press("4")
    await wait_for(pilot, lambda: app.dashboard.view == "queue", what="the queue view")
    await wait_for(pilot, lambda: len(shown_ids(app)) == tasks, what=f"{tasks} tasks shown")
    # the view's keys are the table's, even when it is empty (else a would toggle a pane's plan)
    assert app.focused is app.dashboard.queue_view.table


async def test_add_from_the_form_appends_a_task_record(server: libtmux.Server, tmp_path: Path, queue_file: Path) -> None:
    server.new_session("agents")
    app = make_app(server, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await open_queue(app, pilot, 0)
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, AddTaskScreen), what="the add form")
        form = app.screen
        form.query_one("#task-text", TextArea).insert("fix the flaky test\nthen run the suite")
        (tmp_path / "proj").mkdir()
        form.query_one("#task-folder", Input).value = str(tmp_path / "proj")
        form.query_one("#task-agents", Input).value = "worker-*"
        form.query_one("#task-priority", Input).value = "5"
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: queue_file.exists() and queue_file.stat().st_size > 0, what="the record")
        await wait_for(pilot, lambda: shown_ids(app) == ["1"], what="the task shown")
    [added] = records(queue_file)
    assert isinstance(added, TaskAdded)
    assert (added.task, added.text, added.folder, added.agents, added.priority, added.start) == (
        "1", "fix the flaky test\nthen run the suite", str(tmp_path / "proj"), "worker-*", 5, False
    )


async def test_the_form_refuses_a_task_without_text_or_with_a_relative_folder(
    server: libtmux.Server, tmp_path: Path, queue_file: Path
) -> None:
    server.new_session("agents")
    app = make_app(server, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await open_queue(app, pilot, 0)
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, AddTaskScreen), what="the add form")
        app.screen.query_one("#task-folder", Input).value = "relative/dir"
        await pilot.press("ctrl+s")
        await pilot.pause(0.3)
        assert isinstance(app.screen, AddTaskScreen)  # still open, saying why
        problems = str(app.screen.query_one("#task-problems").render())
        assert "needs a text" in problems and "absolute path" in problems
        await pilot.press("escape")
        await wait_for(pilot, lambda: not isinstance(app.screen, AddTaskScreen), what="the form closed")
    assert not queue_file.exists()


async def test_cancel_asks_first_then_appends_a_cancelled_record(server: libtmux.Server, tmp_path: Path, queue_file: Path) -> None:
    server.new_session("agents")
    add_tasks(queue_file, "first task", "second task")
    app = make_app(server, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await open_queue(app, pilot, 2)
        await pilot.press("j")  # the cursor on task 2
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the confirmation")
        await pilot.press("n")  # not cancelled: nothing appended
        await wait_for(pilot, lambda: not isinstance(app.screen, ConfirmScreen), what="closed")
        await pilot.pause(0.3)
        assert len(records(queue_file)) == 2
        await pilot.press("x")
        await wait_for(pilot, lambda: isinstance(app.screen, ConfirmScreen), what="the confirmation")
        await pilot.press("y")

        def cancelled() -> bool:
            task = app.dashboard.queue_view.snapshot
            return any(t.id == "2" and t.state is TaskState.CANCELLED for t in task.tasks)

        await wait_for(pilot, cancelled, what="task 2 shown cancelled")
    assert [type(r) for r in records(queue_file)] == [TaskAdded, TaskAdded, TaskCancelled]
    assert records(queue_file)[2].task == "2"  # type: ignore[attr-defined]


async def test_reorder_moves_a_queued_task_and_the_cursor_stays_on_it(
    server: libtmux.Server, tmp_path: Path, queue_file: Path
) -> None:
    server.new_session("agents")
    add_tasks(queue_file, "one", "two", "three")
    app = make_app(server, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await open_queue(app, pilot, 3)
        await pilot.press("j", "j")  # task 3
        await pilot.press("plus")
        await wait_for(pilot, lambda: shown_ids(app) == ["1", "3", "2"], what="3 before 2")
        await pilot.press("plus")  # the cursor followed task 3
        await wait_for(pilot, lambda: shown_ids(app) == ["3", "1", "2"], what="3 first")
        notified: list[str] = []
        app.notify = lambda message, **_: notified.append(message)  # type: ignore[method-assign]
        await pilot.press("plus")  # first already: refused, nothing appended
        await wait_for(pilot, lambda: bool(notified), what="the refusal said")
        assert "first in the queue already" in notified[0]
        await pilot.press("minus")
        await wait_for(pilot, lambda: shown_ids(app) == ["1", "3", "2"], what="3 back after 1")
    moved = records(queue_file)[3:]
    assert [type(r) for r in moved] == [TaskMoved, TaskMoved, TaskMoved]
    assert QueueStore(queue_file).refresh().ordered()[1].id == "3"  # as every other reader sees it


async def test_a_record_another_process_appends_shows_in_the_view(
    server: libtmux.Server, tmp_path: Path, queue_file: Path
) -> None:
    server.new_session("agents")
    app = make_app(server, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await open_queue(app, pilot, 0)
        script = (
            "import sys; from pathlib import Path; from nbs_tui.files.queue_store import QueueStore; "
            "from nbs_tui.core.queue.records import TaskAdded; "
            "QueueStore(Path(sys.argv[1])).add(lambda i: TaskAdded(task=i, at=1.0, text='from a script'))"
        )
        subprocess.run([sys.executable, "-c", script, str(queue_file)], check=True, timeout=30)
        await wait_for(pilot, lambda: shown_ids(app) == ["1"], what="the other process's task shown")


async def test_on_a_phone_the_forms_add_button_adds(server: libtmux.Server, tmp_path: Path, queue_file: Path) -> None:
    """A phone's keyboard has no Ctrl+S: the form's Add button (a tap is a click) adds the task."""
    server.new_session("agents")
    app = make_app(server, tmp_path)
    async with app.run_test(size=(50, 30)) as pilot:
        await open_queue(app, pilot, 0)
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, AddTaskScreen), what="the add form")
        app.screen.query_one("#task-text", TextArea).insert("from the phone")
        add_button = app.screen.query_one("#task-add-button")
        add_button.scroll_visible(animate=False)
        await pilot.pause(0.2)
        await pilot.click("#task-add-button")
        await wait_for(pilot, lambda: shown_ids(app) == ["1"], what="the task shown")
    [added] = records(queue_file)
    assert isinstance(added, TaskAdded) and added.text == "from the phone"


async def test_a_task_for_a_folder_that_is_not_one_is_refused(server: libtmux.Server, tmp_path: Path, queue_file: Path) -> None:
    server.new_session("agents")
    app = make_app(server, tmp_path)
    notified: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        app.notify = lambda message, **_: notified.append(message)  # type: ignore[method-assign]
        await open_queue(app, pilot, 0)
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, AddTaskScreen), what="the add form")
        app.screen.query_one("#task-text", TextArea).insert("fix it")
        app.screen.query_one("#task-folder", Input).value = str(tmp_path / "no-such-folder")
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: bool(notified), what="the refusal said")
    assert notified == [f"not added: {tmp_path / 'no-such-folder'} is not a folder"]
    assert not queue_file.exists()


async def test_p_pauses_the_queue_and_resumes_it(server: libtmux.Server, tmp_path: Path, queue_file: Path) -> None:
    server.new_session("agents")
    add_tasks(queue_file, "one")
    app = make_app(server, tmp_path)
    async with app.run_test(size=SIZE) as pilot:
        await open_queue(app, pilot, 1)
        await pilot.press("p")
        await wait_for(pilot, lambda: app.dashboard.queue_view.snapshot.paused, what="shown paused")
        assert "PAUSED" in static_text(app.dashboard.queue_view.query_one("#queue-summary", Static))
        await pilot.press("p")
        await wait_for(pilot, lambda: not app.dashboard.queue_view.snapshot.paused, what="shown running again")
    assert [type(r) for r in records(queue_file)] == [TaskAdded, QueuePaused, QueueResumed]


async def test_enter_on_a_task_shows_its_agent(server: libtmux.Server, tmp_path: Path, queue_file: Path) -> None:
    """A task out with an agent (written here as the feeder writes its hand-out): Enter selects
    that agent in the list; a task with no agent says so."""
    session = server.new_session("agents")
    session.new_window(window_name="worker", window_shell="sleep 600")
    add_tasks(queue_file, "queued one", "with an agent")
    pane = str(session.windows[-1].active_pane.pane_id)  # type: ignore[union-attr]
    store = QueueStore(queue_file)
    store.append(TaskHanding(task="2", at=1000.0, pane=pane))
    store.append(TaskHanded(task="2", at=1000.0, pane=pane))
    # no feeder (it needs Claude Code's signals): it would follow task 2 and fail it, its pane no agent
    app = create_app(settings(server, tmp_path), control_plane=False, claude=False)
    notified: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: pane in app.state.pane_by_id, what="the pane listed")
        await open_queue(app, pilot, 2)
        assert shown_ids(app) == ["2", "1"]  # the task out first
        app.notify = lambda message, **_: notified.append(message)  # type: ignore[method-assign]
        await pilot.press("j", "enter")  # task 1: no agent
        await wait_for(pilot, lambda: bool(notified), what="said")
        assert notified == ["Task 1 has no agent yet."] and app.dashboard.view == "queue"
        await pilot.press("k", "enter")
        await wait_for(pilot, lambda: app.dashboard.view == "dashboard" and app.dashboard.selected_id == pane, what="its agent")
