"""Push notifications through Apprise: the operator's phone hears what the terminal would.

Sent by the process that holds the tmux server's sidecar lease (the service, usually), never by
each dashboard: a push must reach the phone once per event however many dashboards or browser
tabs watch, and also when none does (docs/notifications.md says why here). The rules are the
terminal notifications' own (`nbs_tui.core.notifications`: muting, repeat limit, coalescing a burst),
fed with the sidecar's events (`nbs_tui.notify.event_notices.EventNotices`). Muted are the kinds of
``notify_mute`` and those a dashboard muted from its palette, server-wide (``@nbs_mute``, read
by the lease each tick: the dashboard and the sender are often different processes).

The work queue's outcomes (``task-done``, ``task-failed``) come from its file, not from the
sidecar: the worker thread reads the server's queue (`nbs_tui.files.queue_store`) every
`QUEUE_LOOK` seconds, acting or not, and `nbs_tui.core.notifications.task_notices` says which
tasks ended since; their pushes go the same way, under the same mute.

A push says the agent's name, its state and the question's first line, and nothing else of the
screen. While the browser view runs (`nbs_tui.files.web_endpoint`), it also carries a link whose
one-time credential (`nbs_tui.core.fleet.web_links`) opens that agent's answer card there; when
the agent finished a turn, or a queued task it held is done, and its worktree has changes
(``changed``, asked on this worker thread: git may take a moment), the link opens that agent's
review instead.

Threads. `PushSender.observe` runs on the sidecar's thread and never blocks it: a due push goes
into a bounded queue (a full one drops it and says so). One worker thread, ``nbs-push``, takes
what came within `COALESCE_WINDOW` of the first, folds a burst of one kind into one push, and
sends through Apprise (its own timeouts bound each send). Apprise is loaded, and each URL
checked, by that thread only once this process acts: at its first push, or `LOAD_AFTER`
seconds after it took the lease. Loading it and its plugins costs ~0.25-0.6 s of CPU, which a
dashboard's start does not pay, nor ever a dashboard that watches while the service sends; a
URL Apprise cannot use (or an Apprise that does not load) is still said within seconds. Failures become ``push`` problems, at
most one per `PROBLEM_EVERY` seconds (a phone service down for an hour is one line a minute).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nbs_tui.core.fleet.card_target import format_card_target, review_link_target
from nbs_tui.core.fleet.host_spec import HostSpec
from nbs_tui.core.fleet.model import PaneId
from nbs_tui.core.fleet.web_links import issue_link
from nbs_tui.core.notifications.notify_rules import Notification, NotifyKind, coalesce, push_message
from nbs_tui.core.notifications.notify_settings import unusable_url
from nbs_tui.core.notifications.task_notices import TaskNotices
from nbs_tui.files.queue_store import QueueStore
from nbs_tui.files.web_endpoint import endpoint_path, read_endpoint
from nbs_tui.notify.event_notices import EventNotices
from nbs_tui.sidecar.events import SidecarEvent, StateChange

log = logging.getLogger(__name__)

REVIEWED = frozenset({NotifyKind.FINISHED, NotifyKind.TASK_DONE})
"""The kinds whose push links to the agent's review when its worktree changed (issue 38)."""

PROBLEM_SOURCE = "push"
QUEUE_BOUND = 64
"""Pushes waiting to be sent; more are dropped (a phone service that hangs must not grow memory)."""
COALESCE_WINDOW = 0.5
"""Seconds the worker waits after a push for others of the same moment (a usage limit hits
every agent in the same few ticks), so `coalesce` can fold them into one."""
PROBLEM_EVERY = 60.0
"""At most one ``push`` problem line per this many seconds."""
STOP_WAIT = 2.0
LOAD_AFTER = 5.0
"""Seconds after this process starts acting before Apprise is loaded if no push came first."""
QUEUE_LOOK = 0.5
"""Seconds between two reads of the work queue's file (a read of a file that did not grow is
one ``fstat``)."""


@dataclass(frozen=True, slots=True)
class _Due:
    note: Notification
    question: str
    """The menu's question (needs-input only), one line."""


class PushSender:
    """Decides and sends the pushes of one tmux server while this process holds its lease."""

    def __init__(
        self,
        urls: Sequence[str],
        notices: EventNotices,
        *,
        host: HostSpec,
        names: Callable[[PaneId], str],
        acting: Callable[[], bool],
        problem: Callable[[str, str], None],
        link_ttl: float,
        state_dir: Path,
        wall: Callable[[], float] = time.time,
        load_after: float = LOAD_AFTER,
        changed: Callable[[PaneId], bool] = lambda _pane_id: False,
        queue_store: QueueStore | None = None,
    ) -> None:
        self.urls = tuple(u.strip() for u in urls)
        self._notices = notices
        self._lock = threading.Lock()
        self._host = host
        self._names = names
        self._acting = acting
        self._problem = problem
        self._link_ttl = link_ttl
        self._state_dir = state_dir
        self._wall = wall
        self._load_after = load_after
        self._changed = changed
        """Whether an agent's worktree has changes against its base (a finished turn's push then
        links to its review); called on the worker thread."""
        self._queue: queue.Queue[_Due] = queue.Queue(maxsize=QUEUE_BOUND)
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_problem: float | None = None
        self._unsaid = 0
        """Problems not reported since the last line (rate limit)."""
        self.sent = 0
        """Pushes Apprise accepted (for tests and the log)."""
        self._queue_store = queue_store
        """The server's work queue, whose tasks' outcomes are pushed (None: not this server's)."""
        self._tasks = TaskNotices()
        self.queue_records = -1
        """Records of the queue file read so far (-1: not looked yet; for tests and the log)."""
        self._queue_looked = 0.0

    # -- the sidecar's thread ----------------------------------------------------------------

    def observe(self, event: SidecarEvent) -> None:
        """One sidecar event (sidecar thread): the rules see every one, acting or not, so a
        process that takes the lease over knows the fleet's states and repeats."""
        with self._lock:
            notes = self._notices.observe(event)
        self.offer(notes, event.question if isinstance(event, StateChange) else "")

    def offer(self, notes: Sequence[Notification], question: str = "") -> None:
        """Notifications the rules made due (sidecar thread): queued if this process acts."""
        if not notes or not self._acting():
            return
        for note in notes:
            try:
                self._queue.put_nowait(_Due(note, question if note.kind is NotifyKind.NEEDS_INPUT else ""))
            except queue.Full:
                self._say(f"a push about {note.pane_id} was dropped: {QUEUE_BOUND} are still waiting to be sent")

    # -- start and stop ----------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="nbs-push", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop taking pushes; a send under way is left to finish on its daemon thread."""
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(STOP_WAIT)

    # -- the worker ----------------------------------------------------------------------------

    def _run(self) -> None:
        sender: Any = None
        loaded = False
        acting_since: float | None = None
        while not self._stopping.is_set():
            self._look_at_queue()
            try:
                first = self._queue.get(timeout=0.25)
            except queue.Empty:
                if not loaded:  # load once this process has acted a while, even with nothing to send
                    now = time.monotonic()
                    if not self._acting():
                        acting_since = None
                    elif acting_since is None:
                        acting_since = now
                    if acting_since is not None and now - acting_since >= self._load_after:
                        sender, loaded = self._load(), True
                continue
            if not loaded:
                sender, loaded = self._load(), True
            batch = [first, *self._gather(time.monotonic() + COALESCE_WINDOW)]
            if sender is None:
                continue  # nowhere to send: `_load` said why
            questions = {(d.note.pane_id, d.note.kind): d.question for d in batch}
            for note in coalesce([d.note for d in batch]):
                if self._stopping.is_set():
                    return
                self._send(sender, note, questions.get((note.pane_id, note.kind), ""))

    def _look_at_queue(self) -> None:
        """The work queue's tasks that ended since the last look, offered as pushes (worker
        thread; every `QUEUE_LOOK` seconds, acting or not, so a new holder knows what ended)."""
        store, now = self._queue_store, time.monotonic()
        if store is None or now - self._queue_looked < QUEUE_LOOK:
            return
        self._queue_looked = now
        queue = store.refresh()
        if queue.records == self.queue_records:
            return
        self.queue_records = queue.records
        with self._lock:
            notes = self._notices.outcomes(self._tasks.observe(queue, self._wall()))
        self.offer(notes)

    def _load(self) -> Any:
        """Apprise with every URL it can send to, or None if there is none; what is wrong with
        the others is one ``push`` problem (worker thread)."""
        try:
            import apprise
        except Exception as error:  # a dependency, but an install can be broken
            self._say(f"push notifications are off: Apprise cannot be loaded ({error}); reinstall nbs-tui")
            return None
        sender = apprise.Apprise()
        unusable: list[str] = []
        for index, url in enumerate(self.urls):
            try:
                plugin = apprise.Apprise.instantiate(url)
            except Exception:  # a plugin's own bug: the URL is as unusable
                log.exception("Apprise failed on notify_urls[%d]", index)
                plugin = None
            if plugin is None or not sender.add(plugin):
                unusable.append(unusable_url(index, url))
        if unusable:
            self._say("; ".join(unusable) + ("" if len(sender) else "; push notifications are off"))
        return sender if len(sender) else None

    def _gather(self, until: float) -> list[_Due]:
        """What is queued already, and what comes until ``until``."""
        more: list[_Due] = []
        with contextlib.suppress(queue.Empty):
            while True:
                more.append(self._queue.get_nowait())
        while (left := until - time.monotonic()) > 0 and not self._stopping.is_set():
            try:
                more.append(self._queue.get(timeout=left))
            except queue.Empty:
                break
        return more

    def _send(self, sender: Any, note: Notification, question: str) -> None:
        import apprise

        try:
            name = self._names(note.pane_id)
            review = note.kind in REVIEWED and bool(note.pane_id) and self._changed(note.pane_id)
            title, body = push_message(note, name, question, self._link(note.pane_id, review=review))
            with apprise.LogCapture(level=logging.WARNING) as said:
                ok = bool(sender.notify(body=body, title=title))
        except Exception as error:  # a plugin's own bug must not end the worker
            log.exception("push failed")
            self._say(f"a push about {note.pane_id} failed: {error}")
            return
        if ok:
            self.sent += 1
            return
        lines = [line for line in said.getvalue().splitlines() if line.strip()]
        why = lines[-1].split(" - ", 2)[-1][:200] if lines else "the service refused it"
        self._say(f"a push about {note.pane_id} was not delivered: {why}")

    def _link(self, pane_id: PaneId, *, review: bool = False) -> str:
        """A one-time link to the pane's card (or its review) in the running browser view, else ""."""
        endpoint = read_endpoint(endpoint_path(self._state_dir)) if pane_id else None
        if endpoint is None:
            return ""
        target = format_card_target(self._host.name, self._host.server, pane_id)
        if review:
            target = review_link_target(target)
        credential = issue_link(endpoint.link_key, target, now=self._wall(), ttl=self._link_ttl)
        return f"{endpoint.url}open/{credential}"

    def _say(self, text: str) -> None:
        """A ``push`` problem, at most one per `PROBLEM_EVERY` seconds (any thread)."""
        with self._lock:
            now = time.monotonic()
            if self._last_problem is not None and now - self._last_problem < PROBLEM_EVERY:
                self._unsaid += 1
                return
            if self._unsaid:
                text += f" ({self._unsaid} more push problem(s) since the last one)"
            self._last_problem, self._unsaid = now, 0
        self._problem(PROBLEM_SOURCE, text)
