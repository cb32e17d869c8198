"""One tmux control-mode connection (``tmux -C attach -t $ID``) over pipes.

The reader thread does nothing but read lines and hand them on: ``%output`` goes to
``on_output`` (which must only append to a buffer), replies complete their command, other
notifications go to ``on_notification``. It never waits on a lock held by slow code, so tmux
is never blocked by us (see docs: a control client that stops reading blocks the agents).

Replies and ``%output`` are strictly ordered on the connection, and a reply's callback runs on
the reader thread before the next line is read: a ``capture-pane`` reply callback therefore
sees exactly the output that came after the capture.
"""

from __future__ import annotations

import codecs
import contextlib
import logging
import os
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from nbs_tui.core.fleet.model import ServerAddress
from nbs_tui.tmux.address import socket_path_of
from nbs_tui.tmux.gate_file import GateFile, gate_path
from nbs_tui.tmux.tied import popen_tied
from nbs_tui.tmux.tmux_runner import TmuxRunner

log = logging.getLogger(__name__)

OutputCallback = Callable[[str, bytes], None]
"""``(pane_id, raw bytes)`` from ``%output``; runs on the reader thread, must not block."""
NotificationCallback = Callable[[str], None]
"""A whole notification line such as ``%window-add @3``; runs on the reader thread."""
ExitCallback = Callable[[str], None]
"""Called once, with why, when the connection ends (not when `close` was asked for)."""


GATE_WAIT = 3.0
"""Seconds a start or a close of a control client waits at `StartGate` at most; a start that
has shown nothing for that long (a hung ssh) no longer holds closes back."""


class StartGate:
    """Our control clients of one tmux server never start while another is closing.

    tmux 3.2 to 3.6b crash when a control client still identifying itself is sent a
    notification (3.7 checks for it): the client flags (``CLIENT_CONTROL``) come in an early
    message, its control state only with the last, and the file descriptors it passes split
    those messages over several reads of the server's event loop. A notification tmux sends
    every control client regardless of session (``%client-detached``: a control client
    closing; also ``%session-window-changed``, ``%window-pane-changed``,
    ``%sessions-changed``...) that runs
    in between calls ``control_write`` on the new client, whose state is still NULL: segfault,
    and every agent on the server is gone. Switching the watched session did exactly that, a
    viewer closing while the next one attached: `tests/tmux/test_control_gate.py` crashed
    tmux 3.3a within ~100 such switches, every run, before this gate.

    A start counts from before the fork until the client's first output (tmux writes to a
    control client only after it has identified) or its end; a close from closing its stdin
    until its process exited (by then tmux has sent its ``%client-detached``). Starts may
    overlap each other, closes each other. With a `GateFile` (local servers) the same holds
    between processes: a start holds the file shared, a close exclusive (`nbs_tui.tmux.gate_file`).
    Clients not of nbs-tui (a person's ``tmux detach``) are outside this gate, so the window is
    only made rarer, not closed.
    """

    def __init__(self, file: GateFile | None = None) -> None:
        self._changed = threading.Condition()
        self._starting: dict[object, float] = {}
        """Clients starting, and when they began."""
        self._closing = 0
        self._file = file
        self._held: dict[object, int | None] = {}
        """Starting clients' shared holds of the file."""

    def begin_start(self, client: object) -> None:
        with self._changed:
            if not self._changed.wait_for(lambda: self._closing == 0, GATE_WAIT):
                log.warning("a control client still closing after %.0f s: starting another anyway", GATE_WAIT)
            self._starting[client] = time.monotonic()
        self._drop_stale_holds()
        if self._file is not None:
            fd = self._file.hold(shared=True, wait=GATE_WAIT)
            with self._changed:
                if client in self._starting:
                    self._held[client] = fd
                    return
            GateFile.release(fd)  # it already ended (a failed fork)

    def end_start(self, client: object) -> None:
        """``client`` has identified or ended (once or more: only the first counts)."""
        with self._changed:
            self._starting.pop(client, None)
            fd = self._held.pop(client, None)
            self._changed.notify_all()
        GateFile.release(fd)

    def _drop_stale_holds(self) -> None:
        """Release the file for starts older than GATE_WAIT (a hung one: as `_others_starting`
        no longer counts it here, other processes need not wait for it either)."""
        since = time.monotonic() - GATE_WAIT
        with self._changed:
            stale = [c for c in self._held if self._starting.get(c, since) <= since]
            fds = [self._held.pop(c) for c in stale]
        for fd in fds:
            GateFile.release(fd)

    def _others_starting(self, client: object) -> bool:
        since = time.monotonic() - GATE_WAIT
        return any(began > since for other, began in self._starting.items() if other is not client)

    @contextlib.contextmanager
    def closing(self, client: object) -> Iterator[None]:
        """Close ``client`` once no other client is starting.

        A client closed while it still identifies itself keeps its start's hold of the file
        until it has identified (or ended, or GATE_WAIT passed), and only then lets it go (that
        hold would keep its own close out). Letting it go at once freed the file for another
        process's close, whose ``%client-detached`` then met this identify: each of the two
        crashes of tmux 3.3a caught with its server log in the two-process test of
        `tests/tmux/test_control_gate.py` was that. In one process the client counts as starting
        (`_others_starting`) until then anyway, so only the file needs the wait.
        """
        with self._changed:
            began = self._starting.get(client)
            if self._file is not None and began is not None:
                left = began + GATE_WAIT - time.monotonic()
                if not self._changed.wait_for(lambda: client not in self._starting, max(0.0, left)):
                    log.warning("a control client still starting after %.0f s: closing it anyway", GATE_WAIT)
            own = self._held.pop(client, None)  # its own start's hold would keep its close out
        GateFile.release(own)
        with self._changed:
            if not self._changed.wait_for(lambda: not self._others_starting(client), GATE_WAIT):
                log.warning("a control client still starting after %.0f s: closing another anyway", GATE_WAIT)
            self._closing += 1
        self._drop_stale_holds()
        fd = self._file.hold(shared=False, wait=GATE_WAIT) if self._file is not None else None
        try:
            yield
        finally:
            GateFile.release(fd)
            with self._changed:
                self._closing -= 1
                self._changed.notify_all()


_gates: dict[str, StartGate] = {}
_gates_lock = threading.Lock()


def start_gate(server: str, socket: str | os.PathLike[str] | None = None) -> StartGate:
    """The gate of one server (`TmuxRunner.describe`: a host's servers are apart from ours);
    ``socket``: a local server's socket, whose gate file other processes share."""
    with _gates_lock:
        gate = _gates.get(server)
        if gate is None:
            path = gate_path(socket) if socket is not None else None
            gate = _gates[server] = StartGate(GateFile(path) if path is not None else None)
        return gate


class ControlError(Exception):
    """A command failed (``%error``) or the connection closed before its reply."""


class CommandLost(ControlError):
    """A command line was sent but its answer never came: tmux may or may not have run it."""


@dataclass
class Reply:
    """A command's reply: the lines between ``%begin`` and ``%end``/``%error``."""

    lines: list[bytes] = field(default_factory=list)
    ok: bool = True
    errors: list[bytes] = field(default_factory=list)
    """`ControlClient.command_line`: the lines of the blocks that failed (what tmux would have
    printed on stderr); they are not in ``lines``."""

    def text(self) -> list[str]:
        return [line.decode("utf-8", "replace") for line in self.lines]


ReplyCallback = Callable[[Reply], None]


def decode_output(data: bytes) -> bytes:
    """Undo tmux's ``%output`` escaping: every backslash starts a three-digit octal escape."""
    if b"\\" not in data:
        return data
    return codecs.escape_decode(data)[0]


@dataclass
class _Pending:
    command: str
    callback: ReplyCallback | None
    group: int = 0
    """Commands sent on one line share a group: after an error tmux skips the rest of it."""
    marker: bytes | None = None
    """`ControlClient.command_line`: every block up to the one that is just this line is its
    reply (a line may produce any number of blocks: ``if-shell -F`` runs its commands as
    blocks of their own)."""
    collected: Reply | None = None


class ControlClient:
    """A control-mode client attached to one session; see the module docstring."""

    def __init__(
        self,
        server: ServerAddress,
        session_id: str,
        *,
        on_output: OutputCallback,
        on_notification: NotificationCallback,
        on_exit: ExitCallback,
        tmux: str = "tmux",
        wants_output: Callable[[str], bool] | None = None,
        runner: TmuxRunner | None = None,
        flags: str = "ignore-size",
    ) -> None:
        self.server = server
        self.runner = runner or TmuxRunner(server, tmux)
        """Builds the command line (local tmux, or tmux on another host through ssh)."""
        self.session_id = session_id
        self.flags = flags
        """``attach-session -f`` client flags (``ignore-size``; ``no-output`` for no %output)."""
        self._on_output = on_output
        self._wants_output = wants_output
        """Asked first for each ``%output`` line, so output that will be dropped is not decoded."""
        self._on_notification = on_notification
        self._on_exit = on_exit
        self._tmux = tmux
        self._proc: subprocess.Popen[bytes] | None = None
        self._reader: threading.Thread | None = None
        self._pending: deque[_Pending] = deque()
        self._write_lock = threading.Lock()
        self._closing = False
        self._group = 0
        self._markers = 0
        self.alive = False
        self.exit_reason = ""
        self.bytes_read = 0
        self.returncode: int | None = None
        self._stderr_tail = b""
        self._stderr_reader: threading.Thread | None = None
        self._gate = start_gate(
            self.runner.describe(), None if self.runner.remote else socket_path_of(self.runner.server, self.runner.env())
        )
        """Counts this client as starting from `start` to its first output (or its end)."""

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def start(self) -> None:
        runner = self.runner
        self._gate.begin_start(self)  # ended by the reader: the first output, or the end
        try:
            self._proc = popen_tied(  # dies with us: an orphaned client can hold tmux (see tied.py)
                runner.control_argv(self.session_id, self.flags),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE if runner.capture_stderr else subprocess.DEVNULL,
                env=runner.env(),
                start_new_session=True,
                bufsize=0,
            )
        except BaseException:
            self._gate.end_start(self)
            raise
        self.alive = True
        if self._proc.stderr is not None:
            self._stderr_reader = threading.Thread(
                target=self._read_stderr, name=f"tmux-control-err-{self.session_id}", daemon=True
            )
            self._stderr_reader.start()
        self._reader = threading.Thread(
            target=self._read_loop, name=f"tmux-control-{self.session_id}", daemon=True
        )
        self._reader.start()

    # -- commands ------------------------------------------------------------------------

    def send(self, command: str, callback: ReplyCallback | None = None) -> None:
        """Send one command; ``callback`` gets its reply on the reader thread."""
        self.send_group([(command, callback)])

    def send_group(self, commands: list[tuple[str, ReplyCallback | None]]) -> None:
        """Send commands on one line (``a ; b``): tmux runs them back to back, with no
        ``%output`` between their replies. If one fails, tmux skips the rest; their
        callbacks then get a failed `Reply`."""
        line = " ; ".join(cmd for cmd, _ in commands)
        if "\n" in line:
            raise ValueError("a control-mode command must be one line")
        with self._write_lock:
            if not self.alive or self._proc is None or self._proc.stdin is None:
                raise ControlError(f"control connection to {self.session_id} is closed")
            self._group += 1
            for cmd, callback in commands:
                self._pending.append(_Pending(cmd, callback, self._group))
            try:
                data = line.encode("utf-8") + b"\n"
                while data:
                    written = self._proc.stdin.write(data)
                    data = data[written or 0 :] if written is not None else b""
            except (BrokenPipeError, OSError, ValueError) as exc:
                raise ControlError(f"control connection to {self.session_id} lost: {exc}") from exc

    def send_lines(self, commands: Sequence[tuple[str, ReplyCallback | None]]) -> None:
        """Send commands on lines of their own (one failing skips nothing), in one write."""
        if any("\n" in cmd for cmd, _ in commands):
            raise ValueError("a control-mode command must be one line")
        with self._write_lock:
            if not self.alive or self._proc is None or self._proc.stdin is None:
                raise ControlError(f"control connection to {self.session_id} is closed")
            for cmd, callback in commands:
                self._group += 1
                self._pending.append(_Pending(cmd, callback, self._group))
            try:
                data = "".join(cmd + "\n" for cmd, _ in commands).encode("utf-8")
                while data:
                    written = self._proc.stdin.write(data)
                    data = data[written or 0 :] if written is not None else b""
            except (BrokenPipeError, OSError, ValueError) as exc:
                raise ControlError(f"control connection to {self.session_id} lost: {exc}") from exc

    def command_line(self, line: str, timeout: float = 5.0) -> Reply:
        """Run a whole tmux command line (``a ; b``, ``if-shell -F ...``) and return one reply
        holding the lines of every block it produced, ``ok`` False if any failed: what a
        ``tmux`` process running that line would print. A marker command on the next line closes
        it (it runs even when the line failed). Raises `ControlError` when the line could not be
        sent; `CommandLost` when it was sent but no answer came (it may or may not have run)."""
        if "\n" in line:
            raise ValueError("a control-mode command must be one line")
        done = threading.Event()
        box: list[Reply] = []

        def finish(reply: Reply) -> None:
            box.append(reply)
            done.set()

        with self._write_lock:
            if not self.alive or self._proc is None or self._proc.stdin is None:
                raise ControlError(f"control connection to {self.session_id} is closed")
            self._markers += 1
            marker = f"nbs-end-{self._markers}"
            self._group += 1
            self._pending.append(
                _Pending(line, finish, self._group, marker=marker.encode(), collected=Reply())
            )
            try:
                data = f"{line}\ndisplay-message -p {marker}\n".encode()
                while data:
                    written = self._proc.stdin.write(data)
                    data = data[written or 0 :] if written is not None else b""
            except (BrokenPipeError, OSError, ValueError) as exc:
                if self._pending and self._pending[-1].marker == marker.encode():
                    self._pending.pop()
                raise ControlError(f"control connection to {self.session_id} lost: {exc}") from exc
        if not done.wait(timeout):
            raise CommandLost(f"no reply to {line!r} within {timeout}s")
        reply = box[0]
        if reply.lines[-1:] == [b"\0lost"]:
            raise CommandLost(reply.lines[0].decode("utf-8", "replace"))
        return reply

    # -- reading -------------------------------------------------------------------------

    def _read_loop(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        reason = "connection closed"
        rest = b""
        self._current: Reply | None = None
        self._ours = True
        self._exit_reason = ""
        try:
            while True:
                # Big reads: one wake-up (and one GIL acquisition) handles every line that is
                # waiting, so a busy feeder thread cannot slow the draining of tmux.
                chunk = os.read(fd, 1 << 18)
                if not self.bytes_read:
                    self._gate.end_start(self)  # tmux has taken it as a control client (or it ended)
                if not chunk:
                    break
                self.bytes_read += len(chunk)
                if rest:
                    chunk = rest + chunk
                lines = chunk.split(b"\n")
                rest = lines.pop()
                self._handle_lines(lines)
        except (OSError, ValueError) as exc:
            reason = f"read failed: {exc}"
        finally:
            self._gate.end_start(self)
            self._shutdown(self._exit_reason or reason)

    def _read_stderr(self) -> None:
        """Keep the last few KB of stderr (ssh explains a failed connection there)."""
        assert self._proc is not None and self._proc.stderr is not None
        fd = self._proc.stderr.fileno()
        try:
            while chunk := os.read(fd, 4096):
                self._stderr_tail = (self._stderr_tail + chunk)[-4096:]
        except OSError:
            pass

    def _handle_lines(self, lines: list[bytes]) -> None:
        on_output = self._on_output
        wants = self._wants_output
        current = self._current
        for line in lines:
            if current is not None:
                if line.startswith((b"%end ", b"%error ")) and self._closes_block(line):
                    current.ok = line.startswith(b"%end ")
                    if self._ours:
                        self._finish(current)
                    current = None
                else:
                    current.lines.append(line)
                continue
            if line.startswith(b"%output "):
                parts = line.split(b" ", 2)
                pane_id = parts[1].decode()
                if wants is not None and not wants(pane_id):
                    continue
                data = parts[2] if len(parts) > 2 else b""
                if b"\\" in data:
                    data = codecs.escape_decode(data)[0]
                try:
                    on_output(pane_id, data)
                except Exception:
                    log.exception("output handler failed")
            elif line.startswith(b"%begin "):
                current = Reply()
                # Blocks with flags 0 (the attach itself) answer no command of ours.
                self._ours = not line.endswith(b" 0")
            elif line.startswith(b"%exit"):
                self._exit_reason = line[5:].strip().decode("utf-8", "replace") or "detached"
            elif line.startswith(b"%"):
                try:
                    self._on_notification(line.decode("utf-8", "replace"))
                except Exception:
                    log.exception("notification handler failed")
        self._current = current

    @staticmethod
    def _closes_block(line: bytes) -> bool:
        # "%end TIME NUMBER FLAGS": a reply line can never start with "%end " itself because
        # tmux does not escape replies, but only a 3-field line with digits closes a block.
        parts = line.split(b" ")
        return len(parts) == 4 and all(p.isdigit() for p in parts[1:])

    def _finish(self, reply: Reply) -> None:
        skipped: list[_Pending] = []
        with self._write_lock:
            head = self._pending[0] if self._pending else None
            collected = head.collected if head is not None else None
            if head is not None and collected is not None and not (reply.ok and reply.lines == [head.marker]):
                if reply.ok:
                    collected.lines.extend(reply.lines)
                else:
                    collected.errors.extend(reply.lines)
                    collected.ok = False
                return
            item = self._pending.popleft() if self._pending else None
            if item is not None and not reply.ok:
                while self._pending and self._pending[0].group == item.group:
                    skipped.append(self._pending.popleft())
        if item is None:
            return
        if item.collected is not None:
            reply = item.collected
        for each, each_reply in [(item, reply)] + [(s, Reply(reply.lines, ok=False)) for s in skipped]:
            if each.callback is None:
                continue
            try:
                each.callback(each_reply)
            except Exception:
                log.exception("reply handler for %r failed", each.command)

    def _shutdown(self, reason: str) -> None:
        with self._write_lock:
            self.alive = False
            # Ours to close only if close() came first: a close() after the client died on its
            # own (the supervisor dropping a dead client) must not hide that death.
            closed_by_us = self._closing
            pending = list(self._pending)
            self._pending.clear()
        self.exit_reason = reason
        for item in pending:
            if item.callback is not None:
                lost = [f"connection closed: {reason}".encode()]
                if item.collected is not None:  # sent, never answered: it may have run
                    lost.append(b"\0lost")
                try:
                    item.callback(Reply(lost, ok=False))
                except Exception:
                    log.exception("reply handler failed at shutdown")
        proc = self._proc
        if proc is not None:
            try:
                proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            self.returncode = proc.returncode
        if self._stderr_reader is not None:
            self._stderr_reader.join(1.0)
            if proc is not None and (proc.returncode or self._stderr_tail.strip()):
                reason = self.runner.explain(proc.returncode or 0, self._stderr_tail.decode("utf-8", "replace"))
                self.exit_reason = reason
        if not closed_by_us:
            try:
                self._on_exit(reason)
            except Exception:
                log.exception("exit handler failed")

    def close(self, timeout: float = 2.0) -> None:
        """Detach and end the subprocess; joins the reader thread. Safe to call twice."""
        with self._write_lock:
            self._closing = True
        proc = self._proc
        if proc is None:
            return
        with self._gate.closing(self):  # never while another of ours identifies (`StartGate`)
            with self._write_lock:
                if proc.stdin is not None:
                    with contextlib.suppress(OSError):
                        proc.stdin.close()  # tmux detaches a control client at EOF
            try:
                proc.wait(timeout=timeout / 2)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        reader = self._reader
        if reader is not None and reader is not threading.current_thread():
            reader.join(timeout)
