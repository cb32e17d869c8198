"""The operator's append-only record of every action: time, pane, what was sent, why, and what happened.

One JSON object per line. The file is opened with ``O_APPEND`` for every record and written with
one ``write`` call under the file's ``flock``, so concurrent writers (the dashboard, the service,
a headless runner) interleave whole lines and nothing already written is ever truncated or
rewritten. Reading is for the in-app viewer: :meth:`ActionLog.tail` reads only the end of the
file, and a line that does not parse (a torn write after a crash, a hand edit) is shown as such
rather than hiding the rest.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from nbs_tui.files.control_edit import ends_with_newline


class Outcome(StrEnum):
    """What became of an action."""

    SENT = "sent"
    """Delivered to tmux (or, for a jump, done)."""
    SKIPPED = "skipped"
    """Deliberately not done, for the recorded reason (unsafe, pane gone, turned off)."""
    FAILED = "failed"
    """Tried and tmux refused or errored; the reason holds its message."""


@dataclass(frozen=True, slots=True)
class ActionRecord:
    """One line of the action log."""

    time: float
    """Seconds since the epoch, when the action was decided."""
    action: str
    """``text``, ``paste``, ``key``, ``poll``, ``jump``, ``toggle``…"""
    pane_id: str
    target: str
    """``session:window.pane`` as the operator saw it when choosing."""
    sent: str
    """Exactly what was (or would have been) sent: the text, key names, or a description."""
    why: str
    """Who or what asked for it: ``operator``, ``broadcast to 3 panes``, ``force poll (all idle)``."""
    outcome: Outcome
    reason: str = ""
    """For skipped or failed actions, why; for sent ones, optional detail."""

    def to_json(self) -> str:
        data = asdict(self)
        data["outcome"] = str(self.outcome)
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, line: str) -> ActionRecord:
        """Parse one log line; raises ``ValueError`` when it is not a record."""
        try:
            data: dict[str, Any] = json.loads(line)
            return cls(
                time=float(data["time"]),
                action=str(data["action"]),
                pane_id=str(data["pane_id"]),
                target=str(data.get("target", "")),
                sent=str(data.get("sent", "")),
                why=str(data.get("why", "")),
                outcome=Outcome(data["outcome"]),
                reason=str(data.get("reason", "")),
            )
        except (KeyError, TypeError, json.JSONDecodeError) as error:
            raise ValueError(f"not an action record: {error}") from None

    def describe(self) -> str:
        """One line for a person: time, pane, outcome, what, why."""
        stamp = time.strftime("%H:%M:%S", time.localtime(self.time))
        what = self.sent if len(self.sent) <= 60 else self.sent[:57] + "…"
        line = f"{stamp} {self.target or self.pane_id} {self.outcome} {self.action} {what!r} ({self.why})"
        return f"{line}: {self.reason}" if self.reason else line


RecordListener = Callable[[ActionRecord], None]


class ActionLog:
    """Append records to one file; never truncates it. Thread-safe.

    A record that cannot be written (disk full, read-only home) raises ``OSError`` to the caller,
    which must tell the operator: an unlogged action is a broken promise, not a detail. With a
    ``problem`` sink the failure goes there instead (once until a record is written again: the
    action itself went ahead) and ``append`` returns normally.
    """

    def __init__(self, path: Path, problem: Callable[[str, str], None] | None = None) -> None:
        self.path = path
        self._problem = problem
        self._failing = ""
        self._lock = threading.Lock()
        self._listeners: list[RecordListener] = []
        self._tail_checked = False

    def subscribe(self, listener: RecordListener) -> Callable[[], None]:
        """Call ``listener`` (on the appending thread) after each record; returns an unsubscribe."""
        with self._lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def append(self, record: ActionRecord) -> None:
        try:
            self._append(record)
        except OSError as error:
            if self._problem is None:
                raise
            message = f"cannot write {self.path}: {error.strerror or error}; actions go ahead unlogged"
            if message != self._failing:
                self._failing = message
                self._problem("action log", message)
            return
        self._failing = ""  # written again: a later failure is said again
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener(record)

    def _append(self, record: ActionRecord) -> None:
        data = (record.to_json() + "\n").encode("utf-8")
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                # Every writer (dashboard, service, --headless) holds the file's lock over the
                # check below and its write: a check made while another writer was mid-write
                # could see a page of its line without the newline and "repair" a whole line.
                with contextlib.suppress(OSError):  # a file system without locks: log all the same
                    fcntl.flock(fd, fcntl.LOCK_EX)  # released by the close
                if not self._tail_checked:
                    # A process killed inside a write that spans pages can leave half a line:
                    # our first record starts on a line of its own, the torn one stays visible.
                    if not ends_with_newline(str(self.path)):
                        data = b"\n" + data
                    self._tail_checked = True
                written = os.write(fd, data)
                while written < len(data):  # a short write on a regular file is rare but legal
                    written += os.write(fd, data[written:])
            finally:
                os.close(fd)

    def tail(self, limit: int = 200) -> list[ActionRecord | str]:
        """The last ``limit`` lines, oldest first: records, or the raw text of lines that do not parse."""
        lines = _last_lines(self.path, limit)
        result: list[ActionRecord | str] = []
        for line in lines:
            try:
                result.append(ActionRecord.from_json(line))
            except ValueError:
                result.append(line)
        return result


def _last_lines(path: Path, limit: int, block: int = 64 * 1024) -> list[str]:
    """Read backwards from the end until ``limit`` whole lines are in hand."""
    if limit <= 0:
        return []
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            end = handle.tell()
            data = b""
            position = end
            while position > 0 and data.count(b"\n") <= limit:
                step = min(block, position)
                position -= step
                handle.seek(position)
                data = handle.read(step) + data
    except FileNotFoundError:
        return []
    lines = [line for line in data.decode("utf-8", errors="replace").split("\n") if line.strip()]
    if position > 0 and lines:
        lines = lines[1:]  # the first piece may be the tail of a longer line
    return lines[-limit:]
