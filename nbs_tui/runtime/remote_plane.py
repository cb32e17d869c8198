"""The control plane of another host's projects, whose files stay there (docs/remote.md, channel 2).

* `serve_stdio` is the host's end (``nbs-tui serve-stdio``, run over the host's ssh
  ControlMaster): a *viewer* `ControlPlane` for the project folders of that host's panes (only the
  lease holder, the host's own service, applies inboxes: docs/lease.md). Out, one JSON object a
  line: ``snapshot``, ``history``, ``error`` (a problem of its plane: ``source``, ``message``),
  ``reply``. In: ``pane-dirs`` and ``call`` (an edit:
  register/unregister/create a chat, post to one, pause); edits append to the host's files there.
* `RemoteControlPlane` is this machine's proxy for one host: what the Control view asks of a
  `ControlPlane`, fed by that channel; paths and panes named ``host:/path``, ``host:%3``; the
  channel is opened again whenever ssh drops.
* `HostsControl` puts this machine's plane and the hosts' proxies into one for the Control view.

The proxies are `ControlPlanePort`s beside `ControlPlane`, not kinds of it: each has its own
constructor and state, and neither starts a plane of its own.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import IO, TYPE_CHECKING, Any

from nbs_tui.config import Settings
from nbs_tui.core.control.chat import ChatFile, ChatMessage, parse_chat, parse_cursors
from nbs_tui.core.fleet.problems import ProblemSink
from nbs_tui.core.screen.text import loads_json
from nbs_tui.files.chat_io import read_settled
from nbs_tui.files.control_events import (
    HISTORY_KEEP,
    ControlEvent,
    ControlPlaneError,
    HistoryAppended,
    HistoryEntry,
    Listener,
    PlaneSnapshot,
    ProjectSnapshot,
    SnapshotChanged,
)
from nbs_tui.files.control_plane import ControlPlane
from nbs_tui.files.control_port import ControlPlanePort
from nbs_tui.files.control_wire import (
    decode_entries,
    decode_snapshot,
    encode_history,
    encode_snapshot,
    history_seqs,
)
from nbs_tui.files.registry_io import open_regular

if TYPE_CHECKING:
    from nbs_tui.core.fleet.host_spec import HostSpec
    from nbs_tui.lifecycle.host import Host

log = logging.getLogger(__name__)

SERVE_COMMAND = "serve-stdio"
CALL_TIMEOUT = 15.0
RETRY_DELAYS = (0.5, 1.0, 2.0, 5.0, 10.0)
"""Seconds before opening a dropped channel again (the last one repeats)."""
NOT_FOUND_RETRY = 30.0

_CALLS = ("register_chat", "unregister_chat", "create_chat", "post_message", "set_paused", "toggle_pause")


# -- the host's end ------------------------------------------------------------------------------


def serve_stdio(settings: Settings, stdin: IO[str] | None = None, stdout: IO[str] | None = None) -> int:
    """Run a viewer control plane until stdin ends; events out, requests in (module docstring)."""
    inp = stdin if stdin is not None else sys.stdin
    out = stdout if stdout is not None else sys.stdout
    lock = threading.Lock()

    def send(record: dict[str, Any]) -> None:
        line = json.dumps(record, separators=(",", ":"))
        with lock:
            try:
                out.write(line + "\n")
                out.flush()
            except (BrokenPipeError, ValueError):  # the dashboard went away: stdin ends next
                pass

    def listener(event: ControlEvent) -> None:
        if isinstance(event, SnapshotChanged):
            send({"t": "snapshot", "snapshot": encode_snapshot(event.snapshot)})
        elif isinstance(event, HistoryAppended):
            send(encode_history(event.entries))

    # every failure of the host's plane goes to its problem sink: here, the channel's error lines
    plane = ControlPlane(settings, listener, problem=lambda source, message: send(
        {"t": "error", "source": source, "message": message}))  # fmt: skip
    plane.set_acting(False)  # a viewer: the host's own service applies the inboxes
    plane.start()
    send({"t": "hello", "pid": os.getpid()})
    try:
        for raw in inp:
            try:
                request = loads_json(raw)
            except ValueError:
                send({"t": "error", "project": None, "message": f"serve-stdio: not JSON: {raw[:80]!r}"})
                continue
            kind = request.get("t")
            if kind == "pane-dirs":
                plane.set_pane_dirs(dict(request.get("dirs", {})))
            elif kind == "call":
                send(_answer(plane, request))
    finally:
        plane.stop()
    return 0


def _answer(plane: ControlPlane, request: dict[str, Any]) -> dict[str, Any]:
    ident = request.get("id")
    method = request.get("method", "")
    if method == "read_chat":
        try:
            return {"t": "reply", "id": ident, "ok": True, "result": _read_chat_raw(str(request["args"][0]))}
        except OSError as error:
            return {"t": "reply", "id": ident, "ok": False, "error": f"{error.strerror or error}"}
    if method not in _CALLS:
        return {"t": "reply", "id": ident, "ok": False, "error": f"unknown call {method!r}"}
    try:
        result = getattr(plane, method)(*request.get("args", ()))
    except ControlPlaneError as error:
        return {"t": "reply", "id": ident, "ok": False, "error": str(error)}
    except OSError as error:
        return {"t": "reply", "id": ident, "ok": False, "error": f"{error.strerror or error}"}
    if isinstance(result, ChatMessage):
        result = [result.index, result.handle, result.timestamp, result.text, result.form]
    return {"t": "reply", "id": ident, "ok": True, "result": result}


def _read_chat_raw(path: str) -> dict[str, str]:
    """A chat's bytes (read as `read_chat` does: again while a writer's size disagrees with
    ``file-length``) and its cursors file, for the dashboard's chat view."""
    data = read_settled(path)
    if data is None:
        raise FileNotFoundError(errno.ENOENT, "removed while it was read", path)
    cursors = ""
    with contextlib.suppress(OSError), open_regular(path + ".cursors") as handle:
        cursors = handle.read(1 << 20).decode("utf-8", errors="replace")
    return {"data": base64.b64encode(data).decode("ascii"), "cursors": cursors}


HistoryKey = tuple[int | None, float, str, str, str, str]


def _history_key(entry: HistoryEntry, seq: int | None) -> HistoryKey:
    """What tells a replayed entry from a new one: the host's ``seq`` and read time, not only
    the text (an agent's pane may show the same ``\\nbs-`` line again, to the same effect)."""
    return (seq, entry.seen, entry.project, entry.source, entry.line, entry.outcome.value)


# -- this machine's proxy for one host ------------------------------------------------------------


class RemoteControlPlane(ControlPlanePort):
    """One host's control plane over ``ssh HOST nbs-tui serve-stdio`` (module docstring): its
    snapshot and history as the host last sent them, its edits sent there to be done."""

    def __init__(
        self,
        host: HostSpec,
        there: Host | None,
        listener: Listener,
        problem: ProblemSink,
        *,
        operator_handle: str = "operator",
    ) -> None:
        self.host = host
        self.name = host.name
        self.there = there
        self.operator_handle = operator_handle
        self._tell = listener
        self._report = problem
        self._lock = threading.Lock()
        self._snapshot = PlaneSnapshot()
        self._history: deque[HistoryEntry] = deque(maxlen=HISTORY_KEEP)
        self._seen: set[HistoryKey] = set()
        """Keys of the entries taken: a new channel replays what the last one sent."""
        self._history_keys: deque[HistoryKey] = deque(maxlen=HISTORY_KEEP)
        """The keys of `_history`'s entries, in the same order."""
        self._dirs: dict[str, str] | None = None
        self._dirs_given = threading.Event()
        self._stopping = threading.Event()
        self._proc: subprocess.Popen[str] | None = None
        self._thread: threading.Thread | None = None
        self._calls: dict[int, tuple[threading.Event, list[dict[str, Any]]]] = {}
        self._next_id = 0
        self.connected = False
        if not host.nbs_tui or there is None:
            self._set_note(_not_installed(host.name))

    # -- naming -------------------------------------------------------------------------------

    def qualify(self, path: str) -> str:
        return f"{self.name}:{path}"

    def owns(self, path: str | os.PathLike[str]) -> bool:
        return os.fspath(path).startswith(f"{self.name}:")

    def _local(self, path: str | os.PathLike[str]) -> str:
        text = os.fspath(path)
        if not self.owns(text):
            raise ControlPlaneError(f"{text} is not on {self.name}")
        return text[len(self.name) + 1 :]

    def _set_note(self, message: str) -> None:
        """One line in the Control view for this host (no nbs-tui there, channel down)."""
        self._snapshot = PlaneSnapshot((ProjectSnapshot(root=f"{self.name}:", has_nbs=False, error=message),))

    # -- lifecycle ----------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is not None or not self.host.nbs_tui or self.there is None:
            return
        self._thread = threading.Thread(target=self._run, name=f"nbs-remote-plane-{self.name}", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stopping.set()
        self._dirs_given.set()
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
        if self._thread is not None:
            self._thread.join(timeout)

    def flush(self, timeout: float = 10.0) -> bool:
        return True

    def set_acting(self, acting: bool) -> None:
        """Nothing: the host's own service applies its inboxes; this end only views."""

    def set_pane_dirs(self, mapping: Mapping[str, str | os.PathLike[str]]) -> None:
        dirs = {pane: os.fspath(path) for pane, path in mapping.items()}
        with self._lock:
            self._dirs = dirs
            proc = self._proc
        self._dirs_given.set()  # the fleet answered: the host's ssh master is up
        if proc is not None:
            self._send(proc, {"t": "pane-dirs", "dirs": dirs})

    def apply_scanned_command(self, pane_id: str, project_dir: str | os.PathLike[str], line: str, handle: str | None = None) -> None:
        """Nothing: scanned commands are the host's sidecar's."""

    # -- the channel --------------------------------------------------------------------------

    def _send(self, proc: subprocess.Popen[str], record: dict[str, Any]) -> bool:
        stdin = proc.stdin
        if stdin is None:
            return False
        try:
            with self._lock:
                stdin.write(json.dumps(record, separators=(",", ":")) + "\n")
                stdin.flush()
        except (OSError, ValueError):
            return False
        return True

    def _run(self) -> None:
        # ride on the host's ControlMaster: up once the fleet listed panes, or (a server with no
        # sessions lists none) once the master answers; never open a connection of our own
        while not self._dirs_given.wait(1.0) and not self._master_up():
            pass
        failures = 0
        said = ""
        while not self._stopping.is_set():
            started = time.monotonic()
            rc, stderr, greeted = self._session()
            if self._stopping.is_set():
                break
            self.connected = False
            self._fail_calls("the channel to the host closed")
            if rc == 127 or "not found" in stderr or "No such file" in stderr:
                why = _not_installed(self.name) + f" ({stderr.strip().splitlines()[-1] if stderr.strip() else rc})"
                delay = NOT_FOUND_RETRY
            else:
                detail = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit {rc}"
                why = f"{self.name}: control plane channel closed ({detail}); opening it again"
                failures = 0 if greeted and time.monotonic() - started > 10 else failures + 1
                delay = RETRY_DELAYS[min(failures, len(RETRY_DELAYS) - 1)]
            if greeted or why != said:  # a host down for long is said once, not every retry
                said = why
                self._report("control plane", why)
            if not greeted:
                self._set_note(why)
                self._emit(SnapshotChanged(self._snapshot))
            self._stopping.wait(delay)
            # the host's fleet reconnects its master; a channel of ours must never become one
            while not self._master_up():
                self._stopping.wait(1.0)

    def _master_up(self) -> bool:
        if self._stopping.is_set():
            return True  # stop waiting
        try:
            return self.there is not None and self.there.master_up()
        except (OSError, subprocess.SubprocessError):
            return False

    def _session(self) -> tuple[int | None, str, bool]:
        argv = self.there.nbs_tui_argv([SERVE_COMMAND]) if self.there is not None else None
        assert argv is not None
        try:
            proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True, bufsize=1, start_new_session=True,
            )  # fmt: skip
        except OSError as error:
            return None, str(error), False
        errors: list[str] = []
        reader = threading.Thread(target=lambda: errors.extend(proc.stderr or ()), daemon=True)
        reader.start()
        with self._lock:
            self._proc = proc
            dirs = dict(self._dirs or {})
        self._send(proc, {"t": "pane-dirs", "dirs": dirs})
        greeted = False
        try:
            for line in proc.stdout or ():
                if self._stopping.is_set():
                    break
                try:
                    record = loads_json(line)
                except ValueError:
                    continue  # e.g. a login banner
                if record.get("t") == "hello":
                    greeted = True
                    self.connected = True
                self._take(record)
        finally:
            if proc.poll() is None:
                proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            reader.join(2)
            with self._lock:
                self._proc = None
        return proc.returncode, "".join(errors), greeted

    def _take(self, record: dict[str, Any]) -> None:
        kind = record.get("t")
        if kind == "snapshot":
            self._snapshot = decode_snapshot(record["snapshot"], self.qualify, self.qualify)
            self._emit(SnapshotChanged(self._snapshot))
        elif kind == "history":
            raw = record.get("entries", ())
            fresh = []
            for entry, seq in zip(decode_entries(raw, self.qualify), history_seqs(record), strict=True):
                key = _history_key(entry, seq)
                if key in self._seen:  # a new channel replays what the last one sent
                    continue
                self._seen.add(key)
                self._history_keys.append(key)
                fresh.append(entry)
            if fresh:
                self._history.extend(fresh)
                if len(self._seen) > 2 * HISTORY_KEEP:
                    # A replay holds at most the host's newest HISTORY_KEEP, all among ours.
                    self._seen = set(self._history_keys)
                self._emit(HistoryAppended(tuple(fresh)))
        elif kind == "error":  # the host's problem, to this dashboard's problem sink, named
            self._report(str(record.get("source") or "control plane"), f"{self.name}: {record.get('message', '')}")
        elif kind == "reply":
            waiting = self._calls.pop(int(record.get("id", -1)), None)
            if waiting is not None:
                waiting[1].append(record)
                waiting[0].set()

    def _emit(self, event: ControlEvent) -> None:
        try:
            self._tell(event)
        except Exception:  # a broken listener must not stop the channel
            log.exception("remote control plane %s: the listener failed", self.name)

    def _fail_calls(self, why: str) -> None:
        for event, answer in list(self._calls.values()):
            answer.append({"ok": False, "error": why})
            event.set()
        self._calls.clear()

    def _call(self, method: str, *args: Any) -> Any:
        proc = self._proc
        if proc is None:
            raise ControlPlaneError(f"{self.name}: the control plane channel is not open")
        with self._lock:
            self._next_id += 1
            ident = self._next_id
        done: threading.Event = threading.Event()
        answer: list[dict[str, Any]] = []
        self._calls[ident] = (done, answer)
        if not self._send(proc, {"t": "call", "id": ident, "method": method, "args": list(args)}):
            self._calls.pop(ident, None)
            raise ControlPlaneError(f"{self.name}: the control plane channel is closed")
        if not done.wait(CALL_TIMEOUT):
            self._calls.pop(ident, None)
            raise ControlPlaneError(f"{self.name}: no answer in {CALL_TIMEOUT:.0f} s")
        reply = answer[0]
        if not reply.get("ok"):
            raise ControlPlaneError(f"{self.name}: {reply.get('error', 'failed')}")
        return reply.get("result")

    # -- queries ------------------------------------------------------------------------------

    def snapshot(self) -> PlaneSnapshot:
        return self._snapshot

    def history(self) -> tuple[HistoryEntry, ...]:
        return tuple(self._history)

    def is_paused(self, project: str | os.PathLike[str]) -> bool:
        found = self._snapshot.project(project)
        return bool(found and found.paused)

    # -- edits (a thread worker's: each waits for the host's answer) --------------------------

    def register_chat(self, project: str | os.PathLike[str], path: str, channel: str = "") -> str:
        return str(self._call("register_chat", self._local(project), self._strip(path), channel))

    def unregister_chat(self, project: str | os.PathLike[str], path: str, channel: str = "") -> str:
        return str(self._call("unregister_chat", self._local(project), self._strip(path), channel))

    def create_chat(self, project: str | os.PathLike[str], path: str, register: bool = True, channel: str = "") -> str:
        return str(self._call("create_chat", self._local(project), self._strip(path), register, channel))

    def post_message(self, chat: str | os.PathLike[str], text: str, handle: str | None = None) -> ChatMessage:
        index, who, stamp, said, form = self._call("post_message", self._local(chat), text, handle or self.operator_handle)
        return ChatMessage(int(index), str(who), int(stamp), str(said), str(form))

    def set_paused(self, project: str | os.PathLike[str], paused: bool) -> None:
        self._call("set_paused", self._local(project), paused)

    def toggle_pause(self, project: str | os.PathLike[str]) -> bool:
        return bool(self._call("toggle_pause", self._local(project)))

    def read_chat(self, path: str) -> tuple[ChatFile, dict[str, int]] | None:
        """A chat of this host, read there (the chat view's reader); raises OSError."""
        try:
            got = self._call("read_chat", self._local(path))
        except ControlPlaneError as error:
            raise OSError(errno.EIO, str(error)) from None
        return parse_chat(path, base64.b64decode(got["data"])), parse_cursors(got["cursors"])

    def _strip(self, path: str) -> str:
        return self._local(path) if self.owns(path) else path


def _not_installed(host: str) -> str:
    return f"{host}: nbs-tui is not installed there (set nbs_tui for the host); its control plane is not shown"


# -- this machine's plane and the hosts' proxies as one -------------------------------------------


class HostsControl(ControlPlanePort):
    """The Control view's one plane over every host's (module docstring); routes edits by path."""

    def __init__(self, local: ControlPlanePort | None, remotes: Sequence[RemoteControlPlane]) -> None:
        self.local = local
        self.remotes = tuple(remotes)
        self.operator_handle = local.operator_handle if local is not None else (
            remotes[0].operator_handle if remotes else "operator")  # fmt: skip

    def _parts(self) -> list[ControlPlanePort]:
        return ([self.local] if self.local is not None else []) + list(self.remotes)

    def _route(self, path: str | os.PathLike[str]) -> ControlPlanePort:
        for remote in self.remotes:
            if remote.owns(path):
                return remote
        if self.local is None:
            raise ControlPlaneError(f"{os.fspath(path)}: no control plane runs for this machine")
        return self.local

    def merge(self, event: ControlEvent) -> ControlEvent:
        """A part's event as the view must see it: a snapshot is every part's."""
        return SnapshotChanged(self.snapshot()) if isinstance(event, SnapshotChanged) else event

    def start(self) -> None:
        """Nothing: each host's runtime starts its own part."""

    def stop(self, timeout: float = 5.0) -> None:
        """Nothing: each host's runtime stops its own part."""

    def flush(self, timeout: float = 10.0) -> bool:
        return all(part.flush(timeout) for part in self._parts())

    def set_acting(self, acting: bool) -> None:
        """Nothing: each host's runtime tells its own part."""

    def set_pane_dirs(self, mapping: Mapping[str, str | os.PathLike[str]]) -> None:
        """Nothing: each host's fleet tells its own part."""

    def snapshot(self) -> PlaneSnapshot:
        snaps = [part.snapshot() for part in self._parts()]
        return PlaneSnapshot(tuple(p for s in snaps for p in s.projects), sum(s.history_total for s in snaps))

    def history(self) -> tuple[HistoryEntry, ...]:
        return tuple(sorted((e for part in self._parts() for e in part.history()), key=lambda e: e.seen))

    def is_paused(self, project: str | os.PathLike[str]) -> bool:
        return self._route(project).is_paused(project)

    def read_chat(self, path: str) -> tuple[ChatFile, dict[str, int]] | None:
        """Another host's chat, read there; None: this machine's (the chat view reads it)."""
        for remote in self.remotes:
            if remote.owns(path):
                return remote.read_chat(path)
        return None

    def register_chat(self, project: str | os.PathLike[str], path: str, channel: str = "") -> str:
        return self._route(project).register_chat(project, path, channel)

    def unregister_chat(self, project: str | os.PathLike[str], path: str, channel: str = "") -> str:
        return self._route(project).unregister_chat(project, path, channel)

    def create_chat(self, project: str | os.PathLike[str], path: str, register: bool = True, channel: str = "") -> str:
        return self._route(project).create_chat(project, path, register, channel)

    def post_message(self, chat: str | os.PathLike[str], text: str, handle: str | None = None) -> ChatMessage:
        return self._route(chat).post_message(chat, text, handle)

    def set_paused(self, project: str | os.PathLike[str], paused: bool) -> None:
        self._route(project).set_paused(project, paused)

    def toggle_pause(self, project: str | os.PathLike[str]) -> bool:
        return self._route(project).toggle_pause(project)

    def apply_scanned_command(self, pane_id: str, project_dir: str | os.PathLike[str], line: str, handle: str | None = None) -> None:
        if self.local is not None:
            self.local.apply_scanned_command(pane_id, project_dir, line, handle)
