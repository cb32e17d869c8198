"""The control plane service: every project's ``.nbs/`` control files, live, for all panes at once.

What it does for each project (a folder with a ``.nbs/``: every pane's working directory that
has one, plus ``--project`` folders), in the app and in ``--headless`` alike:

- keeps ``.nbs/control-registry`` (and per-agent ``control-registry-<handle>``) seeded and
  updated from ``.nbs/control-inbox`` (``control-inbox-<handle>``), replaying each inbox from its
  start at launch as the sidecar did, then reading it forward only;
- applies ``\\nbs-`` commands the sidecar scans from panes (:meth:`ControlPlane.apply_scanned_command`);
- summarises registered chats (counts, unread per reader, newest message);
- tracks ``.nbs/control-pause`` and ``set-poll-interval``.

Threading. One plane thread owns all state and does all processing; one watcher thread per
project runs ``watchfiles.watch`` on its ``.nbs/`` (debounce 80 ms instead of 1.6 s) and only
pokes the plane thread; a slow rescan (every ``rescan_interval`` seconds) catches what a
watcher misses (a ``.nbs/`` that appears later, chats outside ``.nbs/``, a watcher that died).

The plane thread takes typed commands (frozen dataclasses) from one queue. The listener is
called **on the plane thread** with frozen-dataclass events. Every failure (a project's files
that cannot be read or written, a pass that raised, a listener that raised) is reported to the
``problem(source, message)`` sink, source ``control plane``, and to nothing else (the one route:
`nbs_tui.core.fleet.problems`); without a sink it goes to the log. Never printed under the UI. In a Textual
app, forward them to the UI thread: ``ControlPlane(settings, lambda e: app.post_message(
ControlPlaneEvent(e)))`` (Textual's ``post_message`` is thread-safe) or use
``app.call_from_thread``. Never block in the listener. Query methods (:meth:`snapshot`,
:meth:`history`, :meth:`poll_interval`, :meth:`is_paused`, ...) read immutable snapshots and are
safe from any thread. Editing methods (:meth:`register_chat`, :meth:`unregister_chat`,
:meth:`create_chat`, :meth:`toggle_pause`) write small files on the caller's thread; the chat
edits then wait (bounded) for the plane to say whether the registry was saved, and
:meth:`post_message` may wait for another writer's lock, so call those from a thread worker.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass

from nbs_tui.config import Settings
from nbs_tui.core.control.chat import ChatError, ChatMessage
from nbs_tui.core.control.control_commands import Verb
from nbs_tui.core.control.inbox import DEFAULT_MAX_LINE
from nbs_tui.core.fleet.problems import ProblemSink
from nbs_tui.files.chat_io import create_chat as io_create_chat
from nbs_tui.files.chat_io import is_chat_file
from nbs_tui.files.chat_io import post_message as io_post_message
from nbs_tui.files.control_edit import (
    INBOX,
    PAUSE,
    REGISTRY,
    append_command,
    check_path,
    inbox_path,
    is_registered,
    pause_path,
    registry_path,
    write_pause,
)
from nbs_tui.files.control_events import (
    HISTORY_KEEP,
    ChannelSnapshot,
    ControlEvent,
    ControlPlaneError,
    EntryStatus,
    HistoryAppended,
    HistoryEntry,
    Listener,
    PauseChanged,
    PlaneSnapshot,
    PollIntervalChanged,
    ProjectSnapshot,
    RegistryChanged,
    SnapshotChanged,
    event_as_json,
)
from nbs_tui.files.control_port import ControlPlanePort
from nbs_tui.files.control_sync import PlaneSync
from nbs_tui.files.control_watch import WATCH_STEP_MS
from nbs_tui.housekeeping.logs import log_problem

__all__ = [
    "INBOX",
    "NOT_SAVED",
    "PAUSE",
    "REGISTRY",
    "ChannelSnapshot",
    "ControlEvent",
    "ControlPlane",
    "ControlPlaneError",
    "ControlPlanePort",
    "EntryStatus",
    "HistoryAppended",
    "HistoryEntry",
    "Listener",
    "PauseChanged",
    "PlaneSnapshot",
    "PollIntervalChanged",
    "ProjectSnapshot",
    "RegistryChanged",
    "SnapshotChanged",
    "event_as_json",
]

log = logging.getLogger(__name__)

SOURCE = "control plane"
"""The source of every problem the control plane reports."""


# -- commands to the plane thread (frozen: they cross threads) ---------------------------------


@dataclass(frozen=True, slots=True)
class _Rescan:
    pass


@dataclass(frozen=True, slots=True)
class _Stop:
    pass


@dataclass(frozen=True, slots=True)
class _Flush:
    done: threading.Event


@dataclass(frozen=True, slots=True)
class _Refresh:
    key: str
    """A project root, or ``*`` for every project."""


@dataclass(frozen=True, slots=True)
class _PaneDirs:
    dirs: tuple[tuple[str, str], ...]
    """(pane id, current directory) for every pane."""


@dataclass(frozen=True, slots=True)
class _Scanned:
    pane_id: str
    project_dir: str
    line: str
    handle: str


@dataclass(frozen=True, slots=True)
class _Saved:
    """Was the registry holding our inbox line at ``offset`` saved? Answered on the plane thread
    after the refresh that applied it (queued before this)."""

    root: str
    channel: str
    offset: int
    answer: Future[str | None]


@dataclass(frozen=True, slots=True)
class _Acting:
    acting: bool


@dataclass(frozen=True, slots=True)
class _WatchFailed:
    root: str
    message: str


_Command = _Rescan | _Stop | _Flush | _Refresh | _PaneDirs | _Scanned | _Saved | _WatchFailed | _Acting

NOT_SAVED = "not saved yet"
"""In what an edit returns when its line is in the inbox but the registry does not hold it: this
plane could not write it (a read-only .nbs/, a full disk: it writes it again every cycle), the
process that applies the inbox did not save it in time, or this plane is too busy to say."""

SAVE_WAIT = 5.0
"""Longest an edit waits to know its line was applied and the registry saved."""


class ControlPlane(ControlPlanePort):
    """Watches and steers the control files of every project; see the module docstring.

    Lifecycle: ``plane = ControlPlane(settings, listener)``, ``plane.start()``, then
    ``plane.set_pane_dirs({pane_id: cwd, ...})`` whenever the fleet changes, ``plane.stop()``
    at exit. ``settings.projects`` are watched from the start.
    """

    def __init__(
        self,
        settings: Settings,
        listener: Listener | None = None,
        *,
        operator_handle: str = "operator",
        debounce_ms: int = 80,
        step_ms: int = WATCH_STEP_MS,
        rescan_interval: float = 2.0,
        history_limit: int = HISTORY_KEEP,
        scan_repeat_window: float = 30.0,
        max_line: int = DEFAULT_MAX_LINE,
        watch: bool = True,
        problem: ProblemSink | None = None,
    ) -> None:
        self.settings = settings
        self.operator_handle = operator_handle
        self._listener = listener
        self._problem: ProblemSink = problem or log_problem
        """Where every failure goes (`nbs_tui.core.fleet.problems`); the log when nobody is given."""
        self._rescan_interval = rescan_interval
        self._queue: queue.Queue[_Command] = queue.Queue()
        self._pending: set[str] = set()
        self._pending_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._write_lock = threading.Lock()
        self._snapshot_changed = threading.Condition()
        """Notified on the plane thread at every new snapshot (an edit waits on it)."""
        self._sync = PlaneSync(
            settings.projects,
            self._emit,
            self._report_problem,
            self._request_refresh,
            lambda root, message: self._queue.put(_WatchFailed(root, message)),
            max_line=max_line,
            scan_repeat_window=scan_repeat_window,
            history_limit=history_limit,
            watch=watch,
            debounce_ms=debounce_ms,
            step_ms=step_ms,
            write_lock=self._write_lock,
        )

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the plane thread; the first pass (seed + replay of every inbox) runs on it."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="nbs-control-plane", daemon=True)
        self._thread.start()
        self._queue.put(_Rescan())

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the plane thread and the watchers (idempotent)."""
        self._stopping.set()
        self._queue.put(_Stop())
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                return  # still busy (a huge replay); it stops at its next command
        for watcher in self._sync.stop_watchers():
            watcher.join(timeout)

    def flush(self, timeout: float = 10.0) -> bool:
        """Process everything queued plus a full rescan, then return (for tests and headless).
        False if the plane did not finish within ``timeout``."""
        done = threading.Event()
        self._queue.put(_Rescan())
        self._queue.put(_Flush(done))
        return done.wait(timeout)

    # -- inputs --------------------------------------------------------------------------------

    def set_pane_dirs(self, mapping: Mapping[str, str | os.PathLike[str]]) -> None:
        """Tell the plane where every pane works (pane id -> current directory); call it again
        whenever panes come, go or change directory. Directories with a ``.nbs/`` become projects."""
        self._queue.put(_PaneDirs(tuple((pane, os.fspath(path)) for pane, path in mapping.items())))

    def set_acting(self, acting: bool) -> None:
        """Whether this process applies the inboxes (it holds the sidecar lease, docs/lease.md);
        a viewer only shows registries, chats and history as they are on disk."""
        self._queue.put(_Acting(acting))

    def apply_scanned_command(
        self, pane_id: str, project_dir: str | os.PathLike[str], line: str, handle: str | None = None
    ) -> None:
        """Apply a ``\\nbs-`` line the sidecar saw on a pane's screen (queued; the outcome shows in
        the history). The same line from the same pane within ``scan_repeat_window`` seconds is
        taken as the same screen seen again and skipped. ``handle`` picks the per-agent
        registry (``control-registry-<handle>``); without it the shared registry is used."""
        self._queue.put(_Scanned(pane_id, os.fspath(project_dir), line, handle or ""))

    # -- queries (any thread) ------------------------------------------------------------------

    def snapshot(self) -> PlaneSnapshot:
        return self._sync.snapshot

    def history(self) -> tuple[HistoryEntry, ...]:
        return self._sync.history()

    def is_paused(self, project: str | os.PathLike[str]) -> bool:
        return os.path.exists(pause_path(os.path.realpath(project)))

    # -- edits (caller's thread) ---------------------------------------------------------------

    def register_chat(self, project: str | os.PathLike[str], path: str, channel: str = "") -> str:
        """Register a chat by appending ``register-chat <path>`` to the project's inbox.

        The path (relative to the project, or absolute) must name an existing nbs-chat file not
        yet registered in that channel. Returns the line written once the registry holds the
        change; otherwise the line followed by `NOT_SAVED` and why (this process could not write
        the registry and retries; the process holding the sidecar lease, which applies the inbox
        then, did not save it within `SAVE_WAIT`; this plane was too busy to say). Waits up to
        `SAVE_WAIT`: call from a thread worker. Raises ControlPlaneError."""
        root, written = check_path(project, path)
        target = os.path.join(root, written)
        if not os.path.isfile(target):
            raise ControlPlaneError(f"{written}: no such file in {root}")
        if not is_chat_file(target):
            raise ControlPlaneError(f"{written} is not an nbs-chat file (its first line is not '=== nbs-chat ===')")
        if is_registered(self._sync.snapshot, root, channel, "chat", written):
            raise ControlPlaneError(f"{written} is already registered")
        return self._append_command(root, channel, Verb.REGISTER_CHAT, written)

    def unregister_chat(self, project: str | os.PathLike[str], path: str, channel: str = "") -> str:
        """Unregister a chat by appending ``unregister-chat <path>`` to the project's inbox
        (returned as `register_chat` returns)."""
        root, written = check_path(project, path)
        if not is_registered(self._sync.snapshot, root, channel, "chat", written):
            raise ControlPlaneError(f"{written} is not registered")
        return self._append_command(root, channel, Verb.UNREGISTER_CHAT, written)

    def create_chat(self, project: str | os.PathLike[str], path: str, register: bool = True, channel: str = "") -> str:
        """Create an empty chat in the nbs-chat format (``.nbs/chat`` is made if needed) and,
        by default, register it. Returns the path as registered (followed by `NOT_SAVED` and why,
        as `register_chat` says it, when the registry could not be written)."""
        root, written = check_path(project, path)
        if not written.endswith(".chat"):
            raise ControlPlaneError("a chat file name ends in .chat")
        target = os.path.join(root, written)
        chat_dir = os.path.join(root, ".nbs", "chat")
        if os.path.dirname(os.path.abspath(target)) == chat_dir:
            try:
                os.makedirs(chat_dir, exist_ok=True)
            except OSError as error:
                raise ControlPlaneError(f"cannot create {chat_dir}: {error.strerror}") from None
        try:
            io_create_chat(target)
        except ChatError as error:
            raise ControlPlaneError(str(error)) from None
        if register:
            line = self._append_command(root, channel, Verb.REGISTER_CHAT, written)
            return written + line.removeprefix(f"{Verb.REGISTER_CHAT.value} {written}")  # and a note if unsaved
        return written

    def post_message(self, chat: str | os.PathLike[str], text: str, handle: str | None = None) -> ChatMessage:
        """Post ``text`` to a chat as ``handle`` (default: the operator's handle) under NBS's lock
        protocol. May wait for another writer: call from a thread worker."""
        try:
            message = io_post_message(chat, handle or self.operator_handle, text)
        except ChatError as error:
            raise ControlPlaneError(str(error)) from None
        self._request_refresh(None)
        return message

    def set_paused(self, project: str | os.PathLike[str], paused: bool) -> None:
        """Create or remove ``.nbs/control-pause`` (paused: the sidecar injects nothing)."""
        root = os.path.realpath(project)
        write_pause(root, paused)
        self._request_refresh(root)

    def toggle_pause(self, project: str | os.PathLike[str]) -> bool:
        """Flip the project's pause; returns the new state."""
        paused = not self.is_paused(project)
        self.set_paused(project, paused)
        return paused

    def _append_command(self, root: str, channel: str, verb: Verb, path: str) -> str:
        """Append the edit's line, then say whether the registry holds it: the operator must not
        read "done" while the line is only in the inbox."""
        line, offset = append_command(
            root, channel, verb, path, self._write_lock,
            on_written=lambda at: self._sync.note_own_line(root, channel, at, "nbs-tui"),
        )  # fmt: skip
        self._request_refresh(root)
        if self._thread is None or not self._thread.is_alive():
            return line  # nobody to apply it yet: the first pass will
        deadline = time.monotonic() + SAVE_WAIT
        answer: Future[str | None] = Future()
        self._queue.put(_Saved(root, channel, offset, answer))
        try:
            why = answer.result(SAVE_WAIT)
        except TimeoutError:  # concurrent.futures' own since 3.11
            return f"{line} ({NOT_SAVED}: the control plane is busy (a long replay?); its history says when it is)"
        if why is None:
            # Another process applies the inbox (it holds the sidecar lease): its registry file,
            # as this plane reads it again, says whether the change was saved.
            if self._registry_shows(root, channel, path, verb is Verb.REGISTER_CHAT, deadline):
                return line
            registry, inbox = os.path.basename(registry_path(root, channel)), os.path.basename(inbox_path(root, channel))
            why = f"{registry} does not show it after {SAVE_WAIT:.0f} s; the nbs-tui holding the sidecar lease applies {inbox}"
            return f"{line} ({NOT_SAVED}: {why})"
        if why:
            return f"{line} ({NOT_SAVED}: {why}; retried every few seconds until it is)"
        return line

    def _registry_shows(self, root: str, channel: str, path: str, registered: bool, deadline: float) -> bool:
        """Wait until the channel's registry lists ``path`` (or no longer does), as this plane
        reads it; False at ``deadline``."""
        with self._snapshot_changed:
            return self._snapshot_changed.wait_for(
                lambda: is_registered(self._sync.snapshot, root, channel, "chat", path) == registered,
                max(0.0, deadline - time.monotonic()),
            )

    def _request_refresh(self, root: str | None) -> None:
        key = root or "*"
        with self._pending_lock:
            if key in self._pending:
                return
            self._pending.add(key)
        self._queue.put(_Refresh(key))

    # -- the plane thread ----------------------------------------------------------------------

    def _emit(self, event: ControlEvent) -> None:
        if isinstance(event, SnapshotChanged):
            with self._snapshot_changed:
                self._snapshot_changed.notify_all()
        if self._listener is None:
            return
        try:
            self._listener(event)
        except Exception as error:  # a broken listener must not stop the plane
            self._listener_failed(event, error)

    def _listener_failed(self, event: ControlEvent, error: Exception) -> None:
        """Log a listener's failure (with its traceback) and report it where the operator looks."""
        message = f"the listener failed on {type(event).__name__}: {type(error).__name__}: {error}"
        log.error("control plane: %s", message, exc_info=error)
        self._report_problem(message)

    def _report_problem(self, message: str) -> None:
        """A failure, to the problem sink (any thread)."""
        try:
            self._problem(SOURCE, message)
        except Exception:  # a sink must not raise; if it does, the log still has the problem
            log.exception("control plane: the problem sink failed on: %s", message)

    def _run(self) -> None:
        next_rescan = time.monotonic() + self._rescan_interval
        while not self._stopping.is_set():
            timeout = max(0.0, next_rescan - time.monotonic())
            try:
                command = self._queue.get(timeout=timeout)
            except queue.Empty:
                command = _Rescan()
            if isinstance(command, _Stop):
                break
            try:
                self._handle(command)
            except Exception as error:  # never let one bad file stop the plane
                log.exception("control plane: %s failed", type(command).__name__)
                self._report_problem(f"{type(error).__name__}: {error}")
            if isinstance(command, _Rescan):
                next_rescan = time.monotonic() + self._rescan_interval
        self._sync.stop_watchers()

    def _handle(self, command: _Command) -> None:
        sync = self._sync
        match command:
            case _Refresh(key):
                with self._pending_lock:
                    self._pending.discard(key)
                sync.refresh(key)
            case _Rescan():
                sync.rescan()
            case _PaneDirs(dirs):
                sync.set_pane_dirs(dict(dirs))
            case _Scanned(pane_id, project_dir, line, handle):
                sync.apply_scanned(pane_id, project_dir, line, handle)
            case _Saved(root, channel, offset, answer):
                answer.set_result(sync.unsaved_after(root, channel, offset))
            case _WatchFailed(root, message):
                sync.report(root, message)
            case _Acting(acting):
                sync.set_acting(acting)
            case _Flush(done):
                done.set()
            case _Stop():
                pass
