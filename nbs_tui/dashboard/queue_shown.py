"""The dashboard's work queue (issue 36, "Visible"): the queue view (and its one line over the
fleet list, `nbs_tui.widgets.queue_strip`) kept up to date from the server's queue file, and the
operator's edits appended to it.

Every dashboard shows the queue, the lease holder's or a viewer's alike: the file is the truth,
and any process may append to it (docs/queue.md). A thread (`nbs_tui.files.queue_watch.QueueWatch`)
reads it again whenever it changes and posts a `QueueRead` to the screen. An edit (add, cancel,
move) is one record appended through the store, off the UI thread (`append` fsyncs); a cancel or
move is decided under the writers' lock on the queue as it is then (`QueueStore.append_checked`,
`nbs_tui.core.queue.edits`), so it fits whatever another process appended meanwhile. Nothing
else is done here: the lease holder's feeder hands tasks out and writes how they went.

The queue shown is this machine's server's. With another host watched, its queue is kept on
that host (``nbs-tui --host H queue ls``): the view says so.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from textual.app import App
from textual.message import Message

from nbs_tui.config import Settings
from nbs_tui.core.fleet.host_spec import LOCAL
from nbs_tui.core.fleet.model import PaneInfo
from nbs_tui.core.queue.edits import EditRefused, NewTask, cancel_record, move_record, pause_record
from nbs_tui.core.queue.records import QueuePaused, Record
from nbs_tui.core.queue.task_states import QueueState, Task
from nbs_tui.files.queue_store import QueueStore
from nbs_tui.files.queue_watch import QueueSnapshot, QueueWatch
from nbs_tui.widgets.pane_text import task_text
from nbs_tui.widgets.queue_strip import QueueStrip
from nbs_tui.widgets.queue_view import QueueView

log = logging.getLogger(__name__)

PROBLEM_SOURCE = "work queue"
"""As the feeder's: a bad line its store and this one both read is one problem."""


@dataclass
class QueueRead(Message):
    """The queue file was read again and changed (posted from the watch's thread)."""

    snapshot: QueueSnapshot


class QueueShown:
    """The queue view's data and edits (module docstring). UI thread, but for the edits' worker."""

    def __init__(
        self, app: App[Any], settings: Settings, view: QueueView, strip: QueueStrip, *, post: Callable[[Message], object],
        panes: Callable[[], Sequence[PaneInfo]], problem: Callable[[str, str], None], wall: Callable[[], float],
    ) -> None:  # fmt: skip
        self._app = app
        self._view = view
        self._strip = strip
        self._post = post
        self._panes = panes
        self._problem = problem
        self._wall = wall
        local = next((host for host in settings.watched_hosts() if host.is_local), None)
        others = [host.name for host in settings.watched_hosts() if not host.is_local]
        self.store: QueueStore | None = None
        """The writers' store (the edits' worker only); None when no local server is watched."""
        self._watch: QueueWatch | None = None
        self.where = local.server.describe() if local is not None else ""
        if local is not None:
            report = self._report
            self.store = QueueStore.for_server(LOCAL, local.server, report=report)
            self._watch = QueueWatch(QueueStore(self.store.path, report), self._read, report)
            view.where = f"The queue's file: {self.store.path}"
        if others:
            view.where += ("\n" if view.where else "") + "".join(
                f"The queue of {name} is kept there: nbs-tui --host {name} queue ls\n" for name in others
            )
        self._write_lock = threading.Lock()
        """One edit at a time through the writers' store (a store is not shared between threads)."""

    # -- reading ---------------------------------------------------------------------------------

    def start(self) -> None:
        if self._watch is not None:
            self._watch.start()

    def stop(self) -> None:
        if self._watch is not None:
            self._watch.stop()

    def _read(self, snapshot: QueueSnapshot) -> None:
        """The watch's thread: hand the queue to the UI thread."""
        self._post(QueueRead(snapshot))

    def _report(self, message: str) -> None:
        """A bad line or an unreadable file (any thread): a problem, listed and counted."""
        self._problem(PROBLEM_SOURCE, message)

    def read(self, message: QueueRead) -> None:
        """UI thread: show the queue as read."""
        self._view.show(message.snapshot, self.names())
        self._strip.show(message.snapshot)

    def names(self) -> dict[str, str]:
        """pane id -> the agent's name as the queue view shows it (its window's name)."""
        return {pane.pane_id: pane.window_name or pane.target for pane in self._panes()}

    def fleet_changed(self) -> None:
        """The fleet was listed again: agents' names may have changed."""
        names = self.names()
        if names != self._view.names:
            self._view.show(self._view.snapshot, names)

    # -- the edits -------------------------------------------------------------------------------

    def add(self) -> None:
        """``a``: the form, then the task appended."""
        if self.store is None:
            self._app.notify("No queue here: this dashboard watches no tmux server of this machine.", timeout=5)
            return
        from nbs_tui.widgets.add_task_form import AddTaskScreen

        def chosen(task: NewTask | None) -> None:
            if task is not None:
                self._edit(f"add {task.text[:40]!r}", lambda store: self._add(store, task))

        folders = [pane.current_path for pane in self._panes() if pane.is_agent and pane.current_path]
        self._app.push_screen(AddTaskScreen(folders, self.where), chosen)

    def cancel(self, task: Task) -> None:
        """``x``: after a confirmation, the task cancelled (if it has not ended meanwhile)."""
        from nbs_tui.widgets.confirm_screen import ConfirmScreen

        def answered(yes: bool | None) -> None:
            if yes:
                self._edit(f"cancel task {task.id}", lambda store: self._checked(store, lambda q: cancel_record(q, task.id, self._wall())))

        with_agent = f" (with {self.names().get(task.pane, task.pane)}: it is not stopped)" if task.state.out else ""
        self._app.push_screen(
            ConfirmScreen(f"Cancel task {task.id}", [task_text(task)], f"Take it out of the queue{with_agent}?"), answered
        )

    def move(self, task: Task, steps: int) -> None:
        """``+``/``-``: the task a place sooner or later, the cursor staying on it."""
        self._edit(f"move task {task.id}", lambda store: self._checked(store, lambda q: move_record(q, task.id, steps, self._wall())))

    def pause(self) -> None:
        """``p``: the queue paused if it runs, resumed if paused (the feeder honours it)."""
        if self.store is None:
            self._app.notify("No queue here: this dashboard watches no tmux server of this machine.", timeout=5)
            return

        def write(store: QueueStore) -> None:
            record = store.append_checked(lambda queue: pause_record(queue, self._wall()))
            said = "paused: nothing more is handed out" if isinstance(record, QueuePaused) else "resumed"
            self._app.call_from_thread(self._app.notify, f"The work queue is {said}.", timeout=4)

        self._edit("pause or resume the queue", write)

    def _add(self, store: QueueStore, task: NewTask) -> None:
        """The edits' worker: a folder that is not one is refused, as ``nbs-tui queue add`` does."""
        if task.folder and not os.path.isdir(task.folder):
            raise EditRefused(f"not added: {task.folder} is not a folder")
        store.add(lambda task_id: task.record(task_id, self._wall()))

    @staticmethod
    def _checked(store: QueueStore, decide: Callable[[QueueState], Record]) -> None:
        """Append what ``decide`` makes of the queue as it is under the lock (it may refuse)."""
        refused: list[EditRefused] = []

        def attempt(queue: QueueState) -> Record | None:
            try:
                return decide(queue)
            except EditRefused as error:
                refused.append(error)
                return None

        store.append_checked(attempt)
        if refused:
            raise refused[0]

    def _edit(self, what: str, write: Callable[[QueueStore], object]) -> None:
        """Append off the UI thread; a refusal or a failed write is said where the operator looks."""
        store = self.store
        assert store is not None

        def work() -> None:
            try:
                with self._write_lock:
                    write(store)
            except EditRefused as error:
                self._app.call_from_thread(self._app.notify, str(error), timeout=5)
            except OSError as error:
                self._problem(PROBLEM_SOURCE, f"could not {what}: {error}")

        self._app.run_worker(work, thread=True, name=f"queue: {what}", group="queue", exit_on_error=False)
