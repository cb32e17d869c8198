"""The plane thread's state and work: seed, replay and follow every inbox, keep registries and
chat summaries, publish snapshots.

Everything here runs on the one plane thread (:mod:`nbs_tui.files.control_plane` owns it and
feeds it typed commands), so nothing here takes a lock except around the history, which other
threads read. Events go out through ``emit``; a problem with one project's files is set on that
project (its snapshot shows it) and reported through ``report`` (the control plane's problem
sink), once until it changes, never raised to the loop.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from nbs_tui.core.control.chat import ChatSummary, ChatTail
from nbs_tui.core.control.control_commands import Outcome, ParsedLine, Replay, Result, process_line
from nbs_tui.core.control.inbox import InboxLine, InboxNotice
from nbs_tui.core.control.registry import Registry, RegistryEntry
from nbs_tui.files.atomic import stale_temp_files, write_atomic
from nbs_tui.files.chat_io import summarise_from
from nbs_tui.files.control_edit import HANDLE, INBOX, PAUSE, REGISTRY, inbox_path, registry_path
from nbs_tui.files.control_events import (
    ChannelSnapshot,
    ControlEvent,
    EntryStatus,
    HistoryAppended,
    HistoryEntry,
    PauseChanged,
    PlaneSnapshot,
    PollIntervalChanged,
    ProjectSnapshot,
    RegistryChanged,
    SnapshotChanged,
)
from nbs_tui.files.control_watch import ProjectWatcher, identity
from nbs_tui.files.inbox_reader import ForwardReader
from nbs_tui.files.registry_io import read_text, seed_entries

_SLICE = 4 * 1024 * 1024
"""Inbox bytes read per step, so a huge backlog is taken in slices."""
_SHOWN_LINE = 300


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
    unsaved: Registry | None = None
    """The registry as it should be, while writing it fails (a full disk, a read-only folder):
    later lines build on it, and it is written again every cycle until it is saved."""
    replayed: bool = False


@dataclass(slots=True)
class _Project:
    root: str
    channels: dict[str, _Channel] = field(default_factory=dict)
    has_nbs: bool = False
    paused: bool = False
    poll_interval: float | None = None
    chat_cache: dict[str, tuple[tuple[Any, ...], ChatSummary, ChatTail | None]] = field(default_factory=dict)
    """Per registered chat: its files' signature, its summary, and the read to count on from."""
    watcher: ProjectWatcher | None = None
    error: str = ""
    chat_listing: tuple[str, ...] = ()

    @property
    def nbs(self) -> str:
        return os.path.join(self.root, ".nbs")


def _signature(path: str) -> tuple[Any, ...]:
    parts: list[Any] = []
    for name in (path, path + ".cursors"):
        try:
            info = os.stat(name)
            parts.append((info.st_ino, info.st_mtime_ns, info.st_size))
        except (OSError, ValueError):  # ValueError: a NUL in a hand-edited path
            parts.append(None)
    return tuple(parts)


class PlaneSync:
    """All of the plane's state, worked on by the plane thread only (see the module docstring).

    ``snapshot`` and :meth:`history` may be read from any thread."""

    def __init__(
        self,
        projects: Iterable[str | os.PathLike[str]],
        emit: Callable[[ControlEvent], None],
        report: Callable[[str], None],
        on_change: Callable[[str], None],
        on_watch_error: Callable[[str, str], None],
        *,
        max_line: int,
        scan_repeat_window: float,
        history_limit: int,
        watch: bool,
        debounce_ms: int,
        step_ms: int,
        write_lock: threading.Lock | None = None,
    ) -> None:
        self._emit = emit
        self._write_lock = write_lock or threading.Lock()
        """The plane's writers' lock: `note_own_line` is called with it held, right after the
        write, so a line read here once it is in the inbox finds its note under it."""
        self._ours: dict[tuple[str, str, int], str] = {}
        """Inbox lines nbs-tui appended itself, by (project, channel, offset): who asked."""
        self._report = report
        self._on_change = on_change
        self._on_watch_error = on_watch_error
        self._max_line = max_line
        self._scan_repeat_window = scan_repeat_window
        self._watch = watch
        self._debounce_ms = debounce_ms
        self._step_ms = step_ms
        self._stopping = False
        self._projects: dict[str, _Project] = {}
        self._pane_dirs: dict[str, str] = {}
        self._fixed = tuple(os.path.realpath(p) for p in projects)
        self._history: deque[HistoryEntry] = deque(maxlen=history_limit)
        self._history_total = 0
        self._seq = 0
        self._history_lock = threading.Lock()
        self.snapshot = PlaneSnapshot()
        self._scanned: dict[tuple[str, str], float] = {}
        self._last_panes: dict[str, tuple[str, ...]] | None = None
        self._acting = True
        """False while another process holds the sidecar lease (docs/lease.md): registries are
        shown as they are on disk, inboxes are neither applied nor read, nothing is written."""

    # -- what the plane thread asks ------------------------------------------------------------

    def rescan(self) -> None:
        """Look at every candidate project (fixed ones and the panes' folders)."""
        self._rescan()

    def set_acting(self, acting: bool) -> None:
        """Start or stop applying inboxes. A channel never applied here is seeded and replayed
        from line 1 when this process starts acting (the replay is idempotent by design)."""
        if acting == self._acting:
            return
        self._acting = acting
        if acting:
            for project in self._projects.values():
                for channel in project.channels.values():
                    if not channel.replayed:
                        self._seed(project, channel)
            self.refresh("*")

    def refresh(self, key: str) -> None:
        """A watcher or an edit saw a change: ``key`` is a project root, or ``*`` for all."""
        if key == "*":
            wanted = set(self._candidates())
            changed = any([self._refresh(p) for r, p in self._projects.items() if p.has_nbs and r in wanted])
        else:
            project = self._projects.get(key)
            changed = self._refresh(project) if project is not None else False
        if changed:
            self._publish()

    def set_pane_dirs(self, dirs: Mapping[str, str]) -> None:
        self._pane_dirs = {pane: os.path.realpath(path) for pane, path in dirs.items()}
        self._rescan()

    def apply_scanned(self, pane_id: str, project_dir: str, line: str, handle: str) -> None:
        self._apply_scanned(pane_id, project_dir, line, handle)

    def note_own_line(self, root: str, channel: str, offset: int, by: str) -> None:
        """nbs-tui appended the inbox line at ``offset`` for ``by``: say so in the history.

        Called on the writing thread with the writers' lock held, right after the write (not
        queued to the plane thread: its watcher could read the line first, and the line then
        went into the history as nobody's, seen under load)."""
        self._ours[(root, channel, offset)] = by

    def unsaved_after(self, root: str, channel: str, offset: int) -> str | None:
        """Why the registry holding the inbox line at ``offset`` is not saved yet ("" if it is
        saved); None when that line has not been applied here (another process holds the lease,
        or the channel has not been read that far)."""
        project = self._projects.get(root)
        found = project.channels.get(channel) if project is not None else None
        if not self._acting or found is None or found.reader.offset <= offset:
            return None
        return found.write_error if found.unsaved is not None else ""

    def report(self, root: str | None, message: str) -> None:
        """A problem found off the plane thread (a watcher that died), reported on it."""
        self._set_error(self._projects.get(root) if root else None, message)

    def history(self) -> tuple[HistoryEntry, ...]:
        with self._history_lock:
            return tuple(self._history)

    def stop_watchers(self) -> list[ProjectWatcher]:
        """Stop every watcher, and start no new one; the watchers, to join (idempotent)."""
        self._stopping = True
        watchers = [p.watcher for p in self._projects.values() if p.watcher is not None]
        for watcher in watchers:
            watcher.stop()
        return watchers

    # -- work ----------------------------------------------------------------------------------

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
            self._set_error(project, f"{project.root}: {type(error).__name__}: {error}")
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
                    inbox_path(project.root, handle),
                    registry_path(project.root, handle),
                    ForwardReader(inbox_path(project.root, handle), self._max_line),
                )
                changed = True
                self._start_channel(project, project.channels[handle])
        for channel in project.channels.values():
            if self._acting:
                if channel.unsaved is not None:
                    changed = self._save_unsaved(project, channel) or changed
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
                    if HANDLE.match(handle):
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
        if self._acting:
            self._seed(project, channel)
            return
        registry, _ = self._load(project, channel)
        if registry is not None:  # a viewer shows the registry as it is
            self._remember(channel, registry)

    def _seed(self, project: _Project, channel: _Channel) -> None:
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
            channel.unsaved = registry.copy()
            if reason != channel.write_error:
                channel.write_error = reason
                self._set_error(project, reason + " (registry changes are not saved; retried until they are)")
            for index, entry in enumerate(entries):
                if entry.outcome is Outcome.APPLIED and not entry.why.startswith("poll interval"):
                    entries[index] = entry._replace(outcome=Outcome.ERROR, why=f"{entry.why}, not saved yet: {reason}")
            disk, _ = self._load(project, channel)
            if disk is not None:
                self._remember(channel, disk)
            return False
        channel.unsaved = None
        if channel.write_error:
            channel.write_error = ""
            if project.error.startswith("cannot write"):
                project.error = ""
        self._remember(channel, registry)
        return True

    def _save_unsaved(self, project: _Project, channel: _Channel) -> bool:
        """Write the registry a failed write left unsaved, now the disk may take it again."""
        assert channel.unsaved is not None
        registry, reason = channel.unsaved, channel.write_error
        if not self._write(project, channel, registry, []):
            return False  # said once already; the next cycle tries again
        self._record([self._entry(time.time(), project.root, os.path.basename(channel.registry), channel.handle, "",
                                  Outcome.APPLIED, f"saved the changes not saved before ({reason})")])
        self._emit(RegistryChanged(project.root, channel.handle, channel.entries))
        return True

    def _set_error(self, project: _Project | None, message: str) -> None:
        if project is not None:
            if project.error == message:
                return
            project.error = message
        self._report(message)

    def _reload_registry(self, project: _Project, channel: _Channel) -> bool:
        """Pick up a hand edit of the registry file."""
        try:
            text = read_text(channel.registry)
        except OSError:
            return False
        if text is None or text == channel.registry_text or channel.unsaved is not None:
            return False  # (while unsaved, the file is older than what we show)
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
        """The registry as on disk now (a hand edit included), or as last known if unreadable;
        while a write fails, the registry as it should be."""
        if channel.unsaved is not None:
            return channel.unsaved.copy()
        registry, _ = self._load(project, channel)
        if registry is None:
            registry = Registry.from_text(project.root, channel.registry_text or "")
        return registry

    def _replay(self, project: _Project, channel: _Channel) -> bool:
        """Launch: replay the whole inbox from line 1 (see core.control.control_commands.Replay), write once."""
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
        root, handle = project.root, channel.handle
        # The items were read before this: the note of any line of ours among them was made
        # before its writer let go of the lock, so taking the lock here finds it.
        with self._write_lock:
            mine = [key for key in self._ours if key[0] == root and key[1] == handle] if self._ours else []
            ours = {key[2]: self._ours.pop(key) for key in mine}
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
        if ours:  # lines of ours written since these were read: for the next read
            with self._write_lock:
                for offset, by in ours.items():
                    self._ours.setdefault((root, handle, offset), by)
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
        if handle and not HANDLE.match(handle):
            handle = ""
        channel = project.channels.get(handle)
        if channel is None:
            channel = project.channels[handle] = _Channel(
                handle,
                inbox_path(root, handle),
                registry_path(root, handle),
                ForwardReader(inbox_path(root, handle), self._max_line),
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
            # a post appends one line: decode that, not every message again (`ChatTail`)
            summary, read = summarise_from(path, cached[2] if cached is not None else None)
            project.chat_cache[path] = (signature, summary, read)
            changed = True
        return changed

    # -- watchers ------------------------------------------------------------------------------

    def _ensure_watcher(self, project: _Project) -> None:
        if not self._watch or self._stopping:
            return
        watcher = project.watcher
        if watcher is not None and watcher.alive() and identity(project.nbs) == watcher.identity:
            return
        self._stop_watcher(project)
        project.watcher = ProjectWatcher(
            project.root,
            project.nbs,
            self._on_change,
            self._on_watch_error,
            debounce_ms=self._debounce_ms,
            step_ms=self._step_ms,
        )
        project.watcher.start()

    def _stop_watcher(self, project: _Project) -> None:
        if project.watcher is not None:
            project.watcher.stop()
        project.watcher = None

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
        self.snapshot = PlaneSnapshot(tuple(projects), total)
        self._emit(SnapshotChanged(self.snapshot))

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
            chats=tuple(summary for _, summary, _ in project.chat_cache.values()),
            paused=project.paused,
            poll_interval=project.poll_interval,
            panes=panes,
            error=project.error if project.has_nbs else (project.error or "no .nbs/ folder yet"),
        )
