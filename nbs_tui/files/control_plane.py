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

The listener is called **on the plane thread** with frozen-dataclass events. In a Textual
app, forward them to the UI thread: ``ControlPlane(settings, lambda e: app.post_message(
ControlPlaneEvent(e)))`` (Textual's ``post_message`` is thread-safe) or use
``app.call_from_thread``. Never block in the listener. Query methods (:meth:`snapshot`,
:meth:`history`, :meth:`poll_interval`, :meth:`is_paused`, ...) read immutable snapshots and are
safe from any thread. Editing methods (:meth:`register_chat`, :meth:`unregister_chat`,
:meth:`create_chat`, :meth:`toggle_pause`) write small files on the caller's thread;
:meth:`post_message` may wait for another writer's lock, so call it from a thread worker.
"""

from __future__ import annotations

import contextlib
import errno
import os
import queue
import re
import stat
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from nbs_tui.config import Settings
from nbs_tui.core.chat import ChatError, ChatMessage, ChatSummary
from nbs_tui.core.control import (
    MAX_ARGUMENT,
    Outcome,
    ParsedLine,
    Replay,
    Result,
    Verb,
    process_line,
)
from nbs_tui.core.inbox import DEFAULT_MAX_LINE, InboxLine, InboxNotice
from nbs_tui.core.registry import Registry, RegistryEntry, normalise
from nbs_tui.files.chat_io import create_chat as io_create_chat
from nbs_tui.files.chat_io import is_chat_file, summarise
from nbs_tui.files.chat_io import post_message as io_post_message
from nbs_tui.files.inbox_reader import ForwardReader
from nbs_tui.files.registry_io import (
    open_regular,
    read_text,
    seed_entries,
    stale_temp_files,
    write_atomic,
)

INBOX = "control-inbox"
REGISTRY = "control-registry"
PAUSE = "control-pause"
_HANDLE = re.compile(r"^[A-Za-z0-9_@+-]+$")
_SLICE = 4 * 1024 * 1024
_SHOWN_LINE = 300


# -- values and events ---------------------------------------------------------------------------


class HistoryEntry(NamedTuple):
    """One inbox line (or scanned command, or file notice) and what became of it.

    A NamedTuple rather than a frozen dataclass: equally immutable, and four times cheaper to
    make, which matters when a 100,000-line inbox is replayed at launch."""

    seen: float
    """Wall-clock time (``time.time()``) when nbs-tui read it."""
    project: str
    source: str
    """Where it came from: ``control-inbox:12``, ``control-inbox-alice:3``, ``pane %4``."""
    channel: str
    """``""`` for ``control-inbox``/``control-registry``, else the agent handle."""
    line: str
    outcome: Outcome
    why: str = ""
    seq: int = 0
    """Position in the plane's history (1, 2, ...): lets a panel skip entries it already has."""


@dataclass(frozen=True, slots=True)
class EntryStatus:
    kind: str
    path: str
    absolute: str
    exists: bool


@dataclass(frozen=True, slots=True)
class ChannelSnapshot:
    handle: str
    inbox: str
    registry: str
    entries: tuple[EntryStatus, ...] = ()
    unparsed: tuple[str, ...] = ()
    lines_read: int = 0
    poll_interval: float | None = None

    @property
    def label(self) -> str:
        return self.handle or "(shared)"


@dataclass(frozen=True, slots=True)
class ProjectSnapshot:
    root: str
    has_nbs: bool
    channels: tuple[ChannelSnapshot, ...] = ()
    chats: tuple[ChatSummary, ...] = ()
    paused: bool = False
    poll_interval: float | None = None
    """The last ``set-poll-interval`` applied in this project (any channel), None if never."""
    panes: tuple[str, ...] = ()
    error: str = ""
    """The latest problem with this project's files (e.g. read-only ``.nbs/``), or ``""``."""
    unregistered_chats: tuple[str, ...] = ()
    """``.nbs/chat/*.chat`` files (not archives) that no registry of the project lists."""

    @property
    def nbs(self) -> str:
        return os.path.join(self.root, ".nbs")

    @property
    def name(self) -> str:
        return os.path.basename(self.root.rstrip("/")) or self.root


@dataclass(frozen=True, slots=True)
class PlaneSnapshot:
    projects: tuple[ProjectSnapshot, ...] = ()
    history_total: int = 0

    def project(self, root: str | os.PathLike[str]) -> ProjectSnapshot | None:
        wanted = os.path.realpath(root)
        for project in self.projects:
            if project.root == wanted:
                return project
        return None


@dataclass(frozen=True, slots=True)
class SnapshotChanged:
    snapshot: PlaneSnapshot


@dataclass(frozen=True, slots=True)
class HistoryAppended:
    entries: tuple[HistoryEntry, ...]


@dataclass(frozen=True, slots=True)
class RegistryChanged:
    project: str
    channel: str
    entries: tuple[RegistryEntry, ...]


@dataclass(frozen=True, slots=True)
class PauseChanged:
    project: str
    paused: bool


@dataclass(frozen=True, slots=True)
class PollIntervalChanged:
    project: str
    channel: str
    seconds: float


@dataclass(frozen=True, slots=True)
class PlaneError:
    project: str | None
    message: str


ControlEvent = SnapshotChanged | HistoryAppended | RegistryChanged | PauseChanged | PollIntervalChanged | PlaneError
Listener = Callable[[ControlEvent], None]


class ControlPlaneError(Exception):
    """An edit asked of the control plane cannot be done; the message is for a person."""


def event_as_json(event: ControlEvent) -> dict[str, Any]:
    """A JSON-ready dict for one event (for ``--headless``'s one-event-per-line output)."""
    if isinstance(event, SnapshotChanged):
        return {
            "event": "control-snapshot",
            "projects": [
                {
                    "root": p.root,
                    "paused": p.paused,
                    "poll_interval": p.poll_interval,
                    "registry": {c.label: [f"{e.kind}:{e.path}" for e in c.entries] for c in p.channels},
                    "error": p.error,
                }
                for p in event.snapshot.projects
            ],
        }
    if isinstance(event, HistoryAppended):
        return {
            "event": "control-history",
            "entries": [
                {"project": e.project, "source": e.source, "line": e.line, "outcome": e.outcome.value, "why": e.why}
                for e in event.entries
            ],
        }
    if isinstance(event, RegistryChanged):
        return {
            "event": "registry-changed",
            "project": event.project,
            "channel": event.channel,
            "entries": [e.line for e in event.entries],
        }
    if isinstance(event, PauseChanged):
        return {"event": "pause-changed", "project": event.project, "paused": event.paused}
    if isinstance(event, PollIntervalChanged):
        return {"event": "poll-interval", "project": event.project, "channel": event.channel, "seconds": event.seconds}
    return {"event": "control-error", "project": event.project, "message": event.message}


# -- internal state (plane thread only) -------------------------------------------------------------


@dataclass(slots=True)
class _Channel:
    handle: str
    inbox: str
    registry: str
    reader: ForwardReader
    registry_text: str | None = None
    entries: tuple[RegistryEntry, ...] = ()
    unparsed: tuple[str, ...] = ()
    poll_interval: float | None = None
    write_error: str = ""
    replayed: bool = False
    ours: dict[int, str] = field(default_factory=dict)
    """Inbox offsets of lines nbs-tui appended itself, with who asked (for the history)."""


@dataclass(slots=True)
class _Project:
    root: str
    channels: dict[str, _Channel] = field(default_factory=dict)
    has_nbs: bool = False
    seeded: bool = False
    paused: bool = False
    poll_interval: float | None = None
    chat_cache: dict[str, tuple[tuple[Any, ...], ChatSummary]] = field(default_factory=dict)
    watcher: threading.Thread | None = None
    watcher_stop: threading.Event | None = None
    nbs_identity: tuple[int, int] | None = None
    error: str = ""
    chat_listing: tuple[str, ...] = ()

    @property
    def nbs(self) -> str:
        return os.path.join(self.root, ".nbs")


def _open_append(path: str) -> int:
    """An O_APPEND descriptor on a regular file (created if missing); never blocks on a FIFO."""
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC | os.O_NONBLOCK, 0o644)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _signature(path: str) -> tuple[Any, ...]:
    parts: list[Any] = []
    for name in (path, path + ".cursors"):
        try:
            info = os.stat(name)
            parts.append((info.st_ino, info.st_mtime_ns, info.st_size))
        except (OSError, ValueError):  # ValueError: a NUL in a hand-edited path
            parts.append(None)
    return tuple(parts)


def _identity(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


class ControlPlane:
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
        step_ms: int = 20,
        rescan_interval: float = 2.0,
        history_limit: int = 20_000,
        scan_repeat_window: float = 30.0,
        max_line: int = DEFAULT_MAX_LINE,
        watch: bool = True,
    ) -> None:
        self.settings = settings
        self.operator_handle = operator_handle
        self._listener = listener
        self._debounce_ms = debounce_ms
        self._step_ms = step_ms
        self._rescan_interval = rescan_interval
        self._scan_repeat_window = scan_repeat_window
        self._max_line = max_line
        self._watch = watch
        self._queue: queue.Queue[tuple[Any, ...]] = queue.Queue()
        self._pending: set[str] = set()
        self._pending_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self._projects: dict[str, _Project] = {}
        self._pane_dirs: dict[str, str] = {}
        self._fixed = tuple(os.path.realpath(p) for p in settings.projects)
        self._history: deque[HistoryEntry] = deque(maxlen=history_limit)
        self._history_total = 0
        self._seq = 0
        self._history_lock = threading.Lock()
        self._snapshot = PlaneSnapshot()
        self._scanned: dict[tuple[str, str], float] = {}
        self._write_lock = threading.Lock()
        self._last_panes: dict[str, tuple[str, ...]] | None = None

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the plane thread; the first pass (seed + replay of every inbox) runs on it."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="nbs-control-plane", daemon=True)
        self._thread.start()
        self._queue.put(("rescan",))

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the plane thread and the watchers (idempotent)."""
        self._stopping.set()
        self._queue.put(("stop",))
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                return  # still busy (a huge replay); it stops at its next message
        for project in list(self._projects.values()):
            watcher = project.watcher
            self._stop_watcher(project)
            if watcher is not None:
                watcher.join(timeout)

    def flush(self, timeout: float = 10.0) -> bool:
        """Process everything queued plus a full rescan, then return (for tests and headless).
        False if the plane did not finish within ``timeout``."""
        done = threading.Event()
        self._queue.put(("rescan",))
        self._queue.put(("flush", done))
        return done.wait(timeout)

    # -- inputs --------------------------------------------------------------------------------

    def set_pane_dirs(self, mapping: Mapping[str, str | os.PathLike[str]]) -> None:
        """Tell the plane where every pane works (pane id -> current directory); call it again
        whenever panes come, go or change directory. Directories with a ``.nbs/`` become projects."""
        self._queue.put(("dirs", {pane: os.fspath(path) for pane, path in mapping.items()}))

    def apply_scanned_command(
        self, pane_id: str, project_dir: str | os.PathLike[str], line: str, handle: str | None = None
    ) -> None:
        """Apply a ``\\nbs-`` line the sidecar saw on a pane's screen (queued; the outcome shows in
        the history). The same line from the same pane within ``scan_repeat_window`` seconds is
        taken as the same screen seen again and skipped. ``handle`` picks the per-agent
        registry (``control-registry-<handle>``); without it the shared registry is used."""
        self._queue.put(("scanned", pane_id, os.fspath(project_dir), line, handle or ""))

    # -- queries (any thread) ------------------------------------------------------------------

    def snapshot(self) -> PlaneSnapshot:
        return self._snapshot

    def history(self) -> tuple[HistoryEntry, ...]:
        with self._history_lock:
            return tuple(self._history)

    def project_for_dir(self, path: str | os.PathLike[str]) -> ProjectSnapshot | None:
        return self._snapshot.project(path)

    def project_for_pane(self, pane_id: str) -> ProjectSnapshot | None:
        for project in self._snapshot.projects:
            if pane_id in project.panes:
                return project
        return None

    def poll_interval(self, project: str | os.PathLike[str]) -> float | None:
        """The project's ``set-poll-interval`` (None: none given; use settings.poll_interval)."""
        found = self._snapshot.project(project)
        return found.poll_interval if found else None

    def poll_interval_for_pane(self, pane_id: str) -> float | None:
        found = self.project_for_pane(pane_id)
        return found.poll_interval if found else None

    def is_paused(self, project: str | os.PathLike[str]) -> bool:
        return os.path.exists(os.path.join(os.path.realpath(project), ".nbs", PAUSE))

    def is_pane_paused(self, pane_id: str) -> bool:
        found = self.project_for_pane(pane_id)
        return bool(found and self.is_paused(found.root))

    # -- edits (caller's thread) ---------------------------------------------------------------

    def register_chat(self, project: str | os.PathLike[str], path: str, channel: str = "") -> str:
        """Register a chat by appending ``register-chat <path>`` to the project's inbox.

        The path (relative to the project, or absolute) must name an existing nbs-chat file not
        yet registered in that channel. Returns the line written. Raises ControlPlaneError."""
        root, written = self._check_path(project, path)
        target = os.path.join(root, written)
        if not os.path.isfile(target):
            raise ControlPlaneError(f"{written}: no such file in {root}")
        if not is_chat_file(target):
            raise ControlPlaneError(f"{written} is not an nbs-chat file (its first line is not '=== nbs-chat ===')")
        if self._registered(root, channel, "chat", written):
            raise ControlPlaneError(f"{written} is already registered")
        return self._append_command(root, channel, Verb.REGISTER_CHAT, written)

    def unregister_chat(self, project: str | os.PathLike[str], path: str, channel: str = "") -> str:
        """Unregister a chat by appending ``unregister-chat <path>`` to the project's inbox."""
        root, written = self._check_path(project, path)
        if not self._registered(root, channel, "chat", written):
            raise ControlPlaneError(f"{written} is not registered")
        return self._append_command(root, channel, Verb.UNREGISTER_CHAT, written)

    def create_chat(self, project: str | os.PathLike[str], path: str, register: bool = True, channel: str = "") -> str:
        """Create an empty chat in the nbs-chat format (``.nbs/chat`` is made if needed) and,
        by default, register it. Returns the path as registered."""
        root, written = self._check_path(project, path)
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
            self._append_command(root, channel, Verb.REGISTER_CHAT, written)
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
        marker = os.path.join(root, ".nbs", PAUSE)
        try:
            if paused:
                fd = _open_append(marker)
                try:
                    os.write(fd, f"paused by nbs-tui at {time.strftime('%Y-%m-%dT%H:%M:%S%z')}\n".encode())
                finally:
                    os.close(fd)
            else:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(marker)
        except OSError as error:
            raise ControlPlaneError(f"cannot {'create' if paused else 'remove'} {marker}: {error.strerror}") from None
        self._request_refresh(root)

    def toggle_pause(self, project: str | os.PathLike[str]) -> bool:
        """Flip the project's pause; returns the new state."""
        paused = not self.is_paused(project)
        self.set_paused(project, paused)
        return paused

    # -- edit helpers --------------------------------------------------------------------------

    def _check_path(self, project: str | os.PathLike[str], path: str) -> tuple[str, str]:
        root = os.path.realpath(project)
        if not os.path.isdir(os.path.join(root, ".nbs")):
            raise ControlPlaneError(f"{root} has no .nbs/ folder")
        if not path or not path.strip():
            raise ControlPlaneError("no path given")
        if path != path.strip():
            raise ControlPlaneError("the path starts or ends with spaces")
        if any(ord(c) < 0x20 or ord(c) == 0x7F for c in path):
            raise ControlPlaneError("the path contains a control character (newline, tab, ...)")
        if len(path) > MAX_ARGUMENT:
            raise ControlPlaneError(f"the path is longer than {MAX_ARGUMENT} characters")
        written = normalise(path)
        absolute = os.path.normpath(os.path.join(root, written))
        if absolute.startswith(root + os.sep):
            written = os.path.relpath(absolute, root)
        return root, written

    def _registered(self, root: str, channel: str, kind: str, path: str) -> bool:
        project = self._snapshot.project(root)
        key = os.path.normpath(os.path.join(root, path))
        if project is None:
            registry = Registry.from_text(root, read_text(self._registry_path(root, channel)) or "")
            return registry.contains(kind, path)
        for snap in project.channels:
            if snap.handle == channel:
                return any(e.kind == kind and e.absolute == key for e in snap.entries)
        return False

    @staticmethod
    def _inbox_path(root: str, channel: str) -> str:
        return os.path.join(root, ".nbs", INBOX + (f"-{channel}" if channel else ""))

    @staticmethod
    def _registry_path(root: str, channel: str) -> str:
        return os.path.join(root, ".nbs", REGISTRY + (f"-{channel}" if channel else ""))

    def _append_command(self, root: str, channel: str, verb: Verb, path: str) -> str:
        """Append one command line to an inbox without disturbing an agent's unfinished line."""
        if channel and not _HANDLE.match(channel):
            raise ControlPlaneError(f"bad agent handle {channel!r}")
        line = f"{verb.value} {path}"
        inbox = self._inbox_path(root, channel)
        with self._write_lock:
            try:
                fd = _open_append(inbox)
            except OSError as error:
                raise ControlPlaneError(f"cannot write {inbox}: {error.strerror}") from None
            try:
                data = (line + "\n").encode()
                deadline = time.monotonic() + 1.0
                while not self._ends_with_newline(inbox):
                    if time.monotonic() >= deadline:
                        # the last line was left unfinished for a second: close it off first
                        data = b"\n" + data
                        break
                    time.sleep(0.02)
                os.write(fd, data)
                end = os.lseek(fd, 0, os.SEEK_CUR)
            except OSError as error:
                raise ControlPlaneError(f"cannot write {inbox}: {error.strerror}") from None
            finally:
                os.close(fd)
        self._queue.put(("ours", root, channel, end - len(line) - 1, "nbs-tui"))
        self._request_refresh(root)
        return line

    @staticmethod
    def _ends_with_newline(path: str) -> bool:
        try:
            with open_regular(path) as handle:
                handle.seek(0, os.SEEK_END)
                if handle.tell() == 0:
                    return True
                handle.seek(-1, os.SEEK_END)
                return handle.read(1) == b"\n"
        except OSError:
            return True

    def _request_refresh(self, root: str | None) -> None:
        key = root or "*"
        with self._pending_lock:
            if key in self._pending:
                return
            self._pending.add(key)
        self._queue.put(("refresh", key))

    # -- the plane thread ----------------------------------------------------------------------

    def _emit(self, event: ControlEvent) -> None:
        if self._listener is None:
            return
        try:
            self._listener(event)
        except Exception as error:  # a broken listener must not stop the plane
            with contextlib.suppress(Exception):
                import sys

                print(f"nbs-tui control plane: listener failed: {error!r}", file=sys.stderr)

    def _run(self) -> None:
        next_rescan = time.monotonic() + self._rescan_interval
        while not self._stopping.is_set():
            timeout = max(0.0, next_rescan - time.monotonic())
            try:
                message = self._queue.get(timeout=timeout)
            except queue.Empty:
                message = ("rescan",)
            try:
                if message[0] == "stop":
                    break
                if message[0] == "rescan":
                    self._rescan()
                    next_rescan = time.monotonic() + self._rescan_interval
                else:
                    self._handle(message)
            except Exception as error:  # never let one bad file stop the plane
                self._emit(PlaneError(None, f"control plane: {type(error).__name__}: {error}"))
        for project in self._projects.values():
            if project.watcher_stop is not None:
                project.watcher_stop.set()

    def _handle(self, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "refresh":
            key = message[1]
            with self._pending_lock:
                self._pending.discard(key)
            if key == "*":
                wanted = set(self._candidates())
                changed = any([self._refresh(p) for r, p in self._projects.items() if p.has_nbs and r in wanted])
            else:
                project = self._projects.get(key)
                changed = self._refresh(project) if project is not None else False
            if changed:
                self._publish()
        elif kind == "dirs":
            self._pane_dirs = {pane: os.path.realpath(path) for pane, path in message[1].items()}
            self._rescan()
        elif kind == "scanned":
            self._apply_scanned(message[1], message[2], message[3], message[4])
        elif kind == "ours":
            project = self._projects.get(message[1])
            if project is not None:
                channel = project.channels.get(message[2])
                if channel is not None:
                    channel.ours[message[3]] = message[4]
        elif kind == "flush":
            message[1].set()

    def _candidates(self) -> list[str]:
        seen: dict[str, None] = {}
        for root in (*self._fixed, *sorted(set(self._pane_dirs.values()))):
            seen.setdefault(root, None)
        return list(seen)

    def _rescan(self) -> None:
        changed = False
        wanted = self._candidates()
        for root in wanted:
            project = self._projects.get(root)
            has_nbs = os.path.isdir(os.path.join(root, ".nbs"))
            if project is None:
                if not has_nbs and root not in self._fixed:
                    continue
                project = self._projects[root] = _Project(root)
                changed = True
            changed = self._refresh(project) or changed
        for root, project in self._projects.items():
            active = root in wanted
            if not active and project.watcher is not None:
                self._stop_watcher(project)
        if changed or self._panes_changed():
            self._publish()

    def _panes_changed(self) -> bool:
        panes = self._panes_by_root()
        if panes != self._last_panes:
            self._last_panes = panes
            return True
        return False

    def _panes_by_root(self) -> dict[str, tuple[str, ...]]:
        result: dict[str, list[str]] = {}
        for pane, root in sorted(self._pane_dirs.items()):
            result.setdefault(root, []).append(pane)
        return {root: tuple(panes) for root, panes in result.items()}

    def _refresh(self, project: _Project) -> bool:
        """Bring one project up to date; a failure is reported and never stops the others."""
        try:
            return self._refresh_project(project)
        except Exception as error:
            self._set_error(project, f"control plane: {type(error).__name__}: {error}")
            return True

    def _refresh_project(self, project: _Project) -> bool:
        """Bring one project up to date with its files; True if anything shown changed."""
        changed = False
        has_nbs = os.path.isdir(project.nbs)
        if has_nbs != project.has_nbs:
            project.has_nbs = has_nbs
            changed = True
            if not has_nbs:
                project.error = f"{project.nbs} is gone"
                self._stop_watcher(project)
            else:
                # a .nbs/ that (re)appears is a fresh start: seed and replay as at launch
                project.error = ""
                project.channels.clear()
                project.chat_cache.clear()
        if not has_nbs:
            return changed
        self._ensure_watcher(project)
        for handle in self._discover_channels(project):
            if handle not in project.channels:
                project.channels[handle] = _Channel(
                    handle,
                    self._inbox_path(project.root, handle),
                    self._registry_path(project.root, handle),
                    ForwardReader(self._inbox_path(project.root, handle), self._max_line),
                )
                changed = True
                self._start_channel(project, project.channels[handle])
        for channel in project.channels.values():
            changed = self._drain(project, channel) or changed
            changed = self._reload_registry(project, channel) or changed
        paused = os.path.exists(os.path.join(project.nbs, PAUSE))
        if paused != project.paused:
            project.paused = paused
            self._emit(PauseChanged(project.root, paused))
            changed = True
        return self._refresh_chats(project) or changed

    def _discover_channels(self, project: _Project) -> list[str]:
        try:
            names = os.listdir(project.nbs)
        except OSError as error:
            self._set_error(project, f"cannot list {project.nbs}: {error.strerror}")
            return list(project.channels)
        handles: set[str] = set()
        shared = False
        for name in names:
            for base in (INBOX, REGISTRY):
                if name == base:
                    shared = True
                elif name.startswith(base + "-"):
                    handle = name[len(base) + 1 :]
                    if _HANDLE.match(handle):
                        handles.add(handle)
        if shared or not handles:
            handles.add("")
        return sorted(handles | set(project.channels))

    def _start_channel(self, project: _Project, channel: _Channel) -> None:
        """First sight of a channel: seed its registry as the sidecar did at start, then the
        inbox is replayed from line 1 by the following drain."""
        for leftover in stale_temp_files(channel.registry):
            with contextlib.suppress(OSError):
                leftover.unlink()
        registry, existed = self._load(project, channel)
        if registry is None:
            return
        added = registry.seed(seed_entries(project.root))
        if added or not existed:
            self._write(project, channel, registry, [])
        else:
            self._remember(channel, registry)
        self._emit(RegistryChanged(project.root, channel.handle, channel.entries))

    def _load(self, project: _Project, channel: _Channel) -> tuple[Registry | None, bool]:
        try:
            text = read_text(channel.registry)
        except OSError as error:
            self._set_error(project, f"cannot read {channel.registry}: {error.strerror}")
            return None, False
        return Registry.from_text(project.root, text or ""), text is not None

    def _remember(self, channel: _Channel, registry: Registry) -> None:
        channel.registry_text = registry.to_text()
        channel.entries = registry.entries()
        channel.unparsed = registry.unparsed_lines()

    def _write(self, project: _Project, channel: _Channel, registry: Registry, entries: list[HistoryEntry]) -> bool:
        """Write the registry atomically; on failure turn 'applied' entries into errors and keep
        showing what is on disk. True if written."""
        try:
            write_atomic(channel.registry, registry.to_text())
        except OSError as error:
            reason = f"cannot write {channel.registry}: {error.strerror or error}"
            if reason != channel.write_error:
                channel.write_error = reason
                self._set_error(project, reason + " (registry changes are not saved)")
            for index, entry in enumerate(entries):
                if entry.outcome is Outcome.APPLIED and not entry.why.startswith("poll interval"):
                    entries[index] = entry._replace(outcome=Outcome.ERROR, why=f"{entry.why}, not saved: {reason}")
            disk, _ = self._load(project, channel)
            if disk is not None:
                self._remember(channel, disk)
            return False
        if channel.write_error:
            channel.write_error = ""
            if project.error.startswith("cannot write"):
                project.error = ""
        self._remember(channel, registry)
        return True

    def _set_error(self, project: _Project | None, message: str) -> None:
        if project is not None:
            if project.error == message:
                return
            project.error = message
        self._emit(PlaneError(project.root if project else None, message))

    def _reload_registry(self, project: _Project, channel: _Channel) -> bool:
        """Pick up a hand edit of the registry file."""
        try:
            text = read_text(channel.registry)
        except OSError:
            return False
        if text is None or text == channel.registry_text:
            return False
        registry = Registry.from_text(project.root, text)
        self._remember(channel, registry)
        channel.registry_text = text
        self._emit(RegistryChanged(project.root, channel.handle, channel.entries))
        return True

    def _drain(self, project: _Project, channel: _Channel) -> bool:
        if not channel.replayed:
            return self._replay(project, channel)
        changed = False
        while True:
            items = channel.reader.read_new(limit=_SLICE)
            if not items:
                return changed
            changed = True
            self._apply_items(project, channel, items)

    def _current_registry(self, project: _Project, channel: _Channel) -> Registry:
        """The registry as on disk now (a hand edit included), or as last known if unreadable."""
        registry, _ = self._load(project, channel)
        if registry is None:
            registry = Registry.from_text(project.root, channel.registry_text or "")
        return registry

    def _replay(self, project: _Project, channel: _Channel) -> bool:
        """Launch: replay the whole inbox from line 1 (see core.control.Replay), write once."""
        channel.replayed = True
        registry = self._current_registry(project, channel)
        before = registry.to_text()
        replay = Replay(registry)
        intervals: list[float] = []
        seen = False
        while True:
            items = channel.reader.read_new(limit=_SLICE)
            if not items:
                break
            seen = True
            self._record(self._entries_for(project, channel, items, replay.feed, intervals))
        replay.finish()
        if registry.to_text() != before:
            if not self._write(project, channel, registry, []):
                why = f"the registry built by replaying {os.path.basename(channel.inbox)} is not saved: {channel.write_error}"
                self._record(
                    [self._entry(time.time(), project.root, os.path.basename(channel.inbox), channel.handle, "", Outcome.ERROR, why)]
                )
            self._emit(RegistryChanged(project.root, channel.handle, channel.entries))
        self._set_interval(project, channel, intervals)
        return seen

    def _entries_for(
        self,
        project: _Project,
        channel: _Channel,
        items: Iterable[InboxLine | InboxNotice],
        feed: Callable[[str], tuple[ParsedLine, Result]],
        intervals: list[float],
    ) -> list[HistoryEntry]:
        now = time.time()
        name = os.path.basename(channel.inbox)
        root, handle, ours = project.root, channel.handle, channel.ours
        entries: list[HistoryEntry] = []
        append = entries.append
        seq = self._seq
        for item in items:
            seq += 1
            if isinstance(item, InboxNotice):
                append(HistoryEntry(now, root, name, handle, "", Outcome.ERROR, item.message, seq))
                continue
            source = f"{name}:{item.number}"
            if ours:
                by = ours.pop(item.offset, None)
                if by:
                    source += f" ({by})"
            text = item.text
            shown = text if len(text) <= _SHOWN_LINE else text[:_SHOWN_LINE] + "…"
            if item.too_long:
                why = f"line of {item.length:,} bytes is longer than the {self._max_line:,}-byte limit; skipped"
                append(HistoryEntry(now, root, source, handle, shown, Outcome.ERROR, why, seq))
                continue
            result = feed(text)[1]
            if result.poll_interval is not None:
                intervals.append(result.poll_interval)
            append(HistoryEntry(now, root, source, handle, shown, result.outcome, result.why, seq))
        self._seq = seq
        return entries

    def _set_interval(self, project: _Project, channel: _Channel, intervals: list[float]) -> None:
        if intervals:
            channel.poll_interval = project.poll_interval = intervals[-1]
            self._emit(PollIntervalChanged(project.root, channel.handle, intervals[-1]))

    def _apply_items(self, project: _Project, channel: _Channel, items: Iterable[InboxLine | InboxNotice]) -> None:
        registry = self._current_registry(project, channel)
        before = registry.to_text()
        intervals: list[float] = []
        entries = self._entries_for(project, channel, items, lambda line: process_line(registry, line), intervals)
        if registry.to_text() != before:
            self._write(project, channel, registry, entries)
            self._emit(RegistryChanged(project.root, channel.handle, channel.entries))
        elif channel.registry_text is None:
            self._remember(channel, registry)
        self._set_interval(project, channel, intervals)
        self._record(entries)

    def _entry(
        self, seen: float, project: str, source: str, channel: str, line: str, outcome: Outcome, why: str = ""
    ) -> HistoryEntry:
        self._seq += 1
        return HistoryEntry(seen, project, source, channel, line, outcome, why, self._seq)

    def _record(self, entries: list[HistoryEntry]) -> None:
        if not entries:
            return
        with self._history_lock:
            self._history.extend(entries)
            self._history_total += len(entries)
        self._emit(HistoryAppended(tuple(entries)))

    def _apply_scanned(self, pane_id: str, project_dir: str, line: str, handle: str) -> None:
        now = time.time()
        root = os.path.realpath(project_dir)
        key = (pane_id, line.strip())
        moment = time.monotonic()
        last = self._scanned.get(key)
        if last is not None and moment - last < self._scan_repeat_window:
            return
        self._scanned[key] = moment
        if len(self._scanned) > 10_000:
            cutoff = moment - self._scan_repeat_window
            self._scanned = {k: t for k, t in self._scanned.items() if t >= cutoff}
        source = f"pane {pane_id}"
        shown = line if len(line) <= _SHOWN_LINE else line[:_SHOWN_LINE] + "…"
        project = self._projects.get(root)
        if project is None and os.path.isdir(os.path.join(root, ".nbs")):
            project = self._projects[root] = _Project(root)
            self._refresh(project)
        if project is None or not project.has_nbs:
            self._record([self._entry(now, root, source, handle, shown, Outcome.ERROR, f"no .nbs/ folder in {root}")])
            self._publish()
            return
        if handle and not _HANDLE.match(handle):
            handle = ""
        channel = project.channels.get(handle)
        if channel is None:
            channel = project.channels[handle] = _Channel(
                handle,
                self._inbox_path(root, handle),
                self._registry_path(root, handle),
                ForwardReader(self._inbox_path(root, handle), self._max_line),
            )
            self._start_channel(project, channel)
            self._drain(project, channel)
        registry = self._current_registry(project, channel)
        before = registry.to_text()
        _, result = process_line(registry, line)
        entries = [self._entry(now, root, source, handle, shown, result.outcome, result.why)]
        if registry.to_text() != before:
            self._write(project, channel, registry, entries)
            self._emit(RegistryChanged(root, handle, channel.entries))
        if result.poll_interval is not None:
            self._set_interval(project, channel, [result.poll_interval])
        self._record(entries)
        self._publish()

    def _refresh_chats(self, project: _Project) -> bool:
        listing = tuple(path for kind, path in seed_entries(project.root) if kind == "chat")
        changed = listing != project.chat_listing
        project.chat_listing = listing
        wanted: dict[str, None] = {}
        for channel in project.channels.values():
            for entry in channel.entries:
                if entry.kind == "chat":
                    wanted.setdefault(entry.absolute, None)
        for path in list(project.chat_cache):
            if path not in wanted:
                del project.chat_cache[path]
                changed = True
        for path in wanted:
            signature = _signature(path)
            cached = project.chat_cache.get(path)
            if cached is not None and cached[0] == signature:
                continue
            project.chat_cache[path] = (signature, summarise(path))
            changed = True
        return changed

    # -- watchers ------------------------------------------------------------------------------

    def _ensure_watcher(self, project: _Project) -> None:
        if not self._watch or self._stopping.is_set():
            return
        identity = _identity(project.nbs)
        alive = project.watcher is not None and project.watcher.is_alive()
        if alive and identity == project.nbs_identity:
            return
        self._stop_watcher(project)
        project.nbs_identity = identity
        stop = threading.Event()
        project.watcher_stop = stop
        project.watcher = threading.Thread(
            target=self._watch_project, args=(project.root, project.nbs, stop), name=f"nbs-watch {project.root}", daemon=True
        )
        project.watcher.start()

    def _stop_watcher(self, project: _Project) -> None:
        if project.watcher_stop is not None:
            project.watcher_stop.set()
        project.watcher = None
        project.watcher_stop = None

    def _watch_project(self, root: str, nbs: str, stop: threading.Event) -> None:
        import watchfiles  # the service may use watchfiles; the core may not

        first = True
        try:
            for changes in watchfiles.watch(
                nbs,
                watch_filter=None,
                debounce=self._debounce_ms,
                step=self._step_ms,
                stop_event=stop,
                rust_timeout=500,
                yield_on_timeout=True,
                raise_interrupt=False,
                ignore_permission_denied=True,
            ):
                if stop.is_set():
                    return
                # The first yield (a change, or the empty set after rust_timeout) proves the
                # watch is in place: refresh once then to catch what changed while it started.
                if changes or first:
                    first = False
                    self._request_refresh(root)
        except Exception as error:  # the slow rescan restarts a dead watcher
            if not stop.is_set():
                self._emit(PlaneError(root, f"watching {nbs} stopped: {error}; falling back to rescans"))

    # -- snapshots -----------------------------------------------------------------------------

    def _publish(self) -> None:
        panes = self._panes_by_root()
        projects = []
        for root in self._candidates() + [r for r in self._projects if r not in self._candidates()]:
            project = self._projects.get(root)
            if project is None:
                continue
            if root not in self._fixed and root not in panes:
                continue
            projects.append(self._project_snapshot(project, panes.get(root, ())))
        with self._history_lock:
            total = self._history_total
        self._snapshot = PlaneSnapshot(tuple(projects), total)
        self._emit(SnapshotChanged(self._snapshot))

    def _project_snapshot(self, project: _Project, panes: tuple[str, ...]) -> ProjectSnapshot:
        channels = tuple(
            ChannelSnapshot(
                handle=channel.handle,
                inbox=channel.inbox,
                registry=channel.registry,
                entries=tuple(
                    EntryStatus(e.kind, e.path, e.absolute, os.path.exists(e.absolute)) for e in channel.entries
                ),
                unparsed=channel.unparsed,
                lines_read=channel.reader.lines_read,
                poll_interval=channel.poll_interval,
            )
            for channel in sorted(project.channels.values(), key=lambda c: c.handle)
        )
        registered = {e.absolute for c in channels for e in c.entries if e.kind == "chat"}
        unregistered = tuple(
            path
            for path in (project.chat_listing if project.has_nbs else ())
            if os.path.normpath(os.path.join(project.root, path)) not in registered
        )
        return ProjectSnapshot(
            unregistered_chats=unregistered,
            root=project.root,
            has_nbs=project.has_nbs,
            channels=channels,
            chats=tuple(summary for _, summary in project.chat_cache.values()),
            paused=project.paused,
            poll_interval=project.poll_interval,
            panes=panes,
            error=project.error if project.has_nbs else (project.error or "no .nbs/ folder yet"),
        )
