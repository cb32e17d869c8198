"""tmux on another host, through the user's own OpenSSH client.

A `SshHost` (a `nbs_tui.core.fleet.host_spec.HostSpec`) names a host the way OpenSSH does (``user@box``, an alias of ``~/.ssh/config`` with
its keys, agent and ProxyJump). `SshTmuxRunner` is the `TmuxRunner` of that host: every tmux
command line becomes ``ssh [options] -T -e none DEST -- 'tmux -u [-L|-S] ...'``.

* **One connection per host, ours alone, and it dies with us.** The master (``ControlMaster``,
  its socket in a private 0700 folder under ``$XDG_RUNTIME_DIR`` or the temp folder) is a child
  of nbs-tui tied to it (`nbs_tui.tmux.tied`: SIGKILLed if nbs-tui dies, however it dies; no
  ``ControlPersist`` daemon left behind). Its own session runs the connect script (tmux there?
  its version, orphans reaped, every pane listed with its agent verdict: one round trip, the
  login included) and then waits on its stdin. Every other ssh of the host is a session on it
  (``ControlMaster=no``: a few ms, never a second login); one asked before the fleet connects
  (the lease's) waits for the connection or makes it. The CLI starts connecting before it
  imports the dashboard (`preconnect`).
* **A control client dies with its session** (`nbs_tui.tmux.host_scripts.TIED_CLIENT`): tmux 3.3a-3.5a keep a control
  client whose session closed while output was queued for it, which holds the host's server
  (and our master's channel) forever.
* **Never a prompt.** ``BatchMode=yes``: a host that wants a password, a passphrase or an unknown
  host key fails at once, and `explain` turns ssh's stderr into one line for that host.
* **A dead link is seen.** ``ServerAliveInterval``/``ServerAliveCountMax`` (5 s x 2) end a
  partitioned connection, ``ConnectTimeout`` bounds a connect; a killed ssh is EOF at once.
* **No pty** (``-T``): control mode streams byte-exact output with no echo and no CRLF; ``-e
  none`` so no byte is an escape character. ``tmux -u`` because a non-interactive ssh session
  often has no UTF-8 locale (names and titles would lose their non-ASCII characters).
* **Reaping** (`prepare`, on every connect): a connection that dies while tmux still has output
  queued can leave the remote ``tmux -C`` client orphaned (parent PID 1) yet attached, and while
  it is the only client every pane on that host freezes. ``detach-client`` does not remove it;
  SIGTERM does. tmux releases up to 3.7c have this bug. (Our own clients now die with their
  sessions; this stops those of an older nbs-tui, or of a relay killed outright.)

Options the user gives (``ssh_options``) come after the ones nbs-tui must hold (``BatchMode``,
the ``ControlPath``, ``ControlMaster``, ``ControlPersist``) and before its defaults: ssh takes the
first value of an option, so a user can change the keep-alive or timeouts but never get a
password prompt under the dashboard, nor a master that outlives it.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import re
import select
import shlex
import shutil
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NoReturn

from nbs_tui.core.fleet.host_spec import HostSpec
from nbs_tui.core.fleet.model import PaneInfo, ServerAddress
from nbs_tui.housekeeping.logs import runtime_dir
from nbs_tui.tmux.discovery import FORMAT
from nbs_tui.tmux.errors import HostUnreachable, TmuxError
from nbs_tui.tmux.host_scripts import (
    AGENTS,
    CONNECTED,
    REAP,
    TIED_CLIENT,
    connect_script,
    parse_agents,
    reaped,
    split_connect_output,
)
from nbs_tui.tmux.tied import popen_tied
from nbs_tui.tmux.tmux_runner import TmuxRunner

log = logging.getLogger(__name__)

MIN_TMUX = (3, 2)
"""``attach-session -f ignore-size`` (a control client that never resizes a window) is 3.2's."""

SSH_FAILED = 255
"""ssh's own exit status when the connection failed or was lost (the remote command's otherwise)."""


SshHost = HostSpec
"""A host reached through ssh: a `HostSpec` with a destination."""


def parse_version(text: str) -> tuple[int, int] | None:
    """``tmux 3.3a`` / ``tmux next-3.4`` / ``tmux master`` -> (3, 3) / (3, 4) / None."""
    found = re.search(r"(\d+)\.(\d+)", text)
    return (int(found.group(1)), int(found.group(2))) if found else None


_local_version: tuple[int, int] | None = None
_local_version_lock = threading.Lock()


def local_tmux_version(tmux: str = "tmux") -> tuple[int, int] | None:
    """This machine's tmux version (asked once)."""
    global _local_version
    with _local_version_lock:
        if _local_version is None:
            try:
                out = TmuxRunner(ServerAddress(), tmux).execute([tmux, "-V"], timeout=5)
            except TmuxError:
                return None
            _local_version = parse_version(out)
        return _local_version


_SSH_NOISE = ("Warning: Permanently added", "** WARNING: connection is not using a post-quantum")


def explain_failure(host: SshHost, returncode: int, stderr: str) -> str:
    """One line, for the operator, saying why ssh or the remote tmux failed on ``host``."""
    name, dest = host.name, host.destination
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip() and not ln.startswith(_SSH_NOISE)]
    text = "\n".join(lines)
    if "REMOTE HOST IDENTIFICATION HAS CHANGED" in text:
        return f"{name}: the host key of {dest} has CHANGED; check it, then fix ~/.ssh/known_hosts"
    if "Host key verification failed" in text or "host key is known for" in text:
        return (
            f"{name}: the host key of {dest} is not known; run `ssh {dest}` once to check and accept it"
        )
    if "Permission denied" in text or "Too many authentication failures" in text:
        return (
            f"{name}: ssh {dest} wants a password or a key it does not have (nbs-tui never prompts): "
            f"load the key into ssh-agent or set up key login (ssh-copy-id {dest})"
        )
    if "Connection refused" in text:
        return f"{name}: connection refused: no ssh server listening at {dest}"
    if "Could not resolve hostname" in text:
        return f"{name}: unknown host name {dest}"
    if "timed out" in text.lower():
        return f"{name}: {dest} did not answer (connection timed out)"
    if "No route to host" in text or "Network is unreachable" in text:
        return f"{name}: {dest} is unreachable ({lines[-1]})"
    if "not responding" in text:
        return f"{name}: connection to {dest} lost (server not responding)"
    if "mux_client" in text or ("master" in text.lower() and "fail" in text):
        return f"{name}: connection to {dest} lost"
    if returncode == 127 or (re.search(r"(command )?not found", text) and host.tmux in text):
        return (
            f"{name}: tmux is not installed on {dest} (or not on the PATH of a non-interactive "
            f"ssh session: set the host's tmux to its full path)"
        )
    if returncode == SSH_FAILED and not text:
        return f"{name}: connection to {dest} lost"  # a multiplexed session whose master died
    if returncode < 0:
        return f"{name}: ssh to {dest} was killed (signal {-returncode})"
    detail = lines[-1] if lines else f"exited with {returncode}"
    if returncode == SSH_FAILED:
        return f"{name}: ssh to {dest}: {detail}"
    return f"{name}: {detail}"


@dataclass
class PrepareResult:
    version: tuple[int, int] | None = None
    reaped: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Things the operator should know that do not stop the host (e.g. an older tmux)."""


@dataclass
class _Connected:
    """What one run of the connect script said (`SshTmuxRunner._connect_script`)."""

    result: PrepareResult
    listing: str | None
    """``list-panes -a -F FORMAT``'s output (None: it failed, e.g. no server: asked again)."""
    verdicts: dict[int, bool]
    """Agent verdicts of the listed panes' pids (`parse_agents`)."""
    at: float = field(default_factory=time.monotonic)


PREFETCH_FRESH = 2.0
"""Seconds a connect script's pane listing and agent verdicts answer the fleet's first
``list-panes`` and agent detection (taken once each): the supervisor asks right after `prepare`."""

RECONNECT_QUIET = 1.0
"""After a failed connect, a command that finds no master runs on its own connection for this
long instead of trying to make the master again (the fleet's supervisor backs off by itself)."""

_LIST_PANES = ("list-panes", "-a", "-F", FORMAT)
"""What `nbs_tui.tmux.discovery.list_panes` runs: the connect script runs it too."""


class SshTmuxRunner(TmuxRunner):
    """Run tmux on ``host`` through ssh (see the module docstring)."""

    remote = True
    capture_stderr = True
    host: SshHost

    def __init__(
        self,
        host: SshHost,
        *,
        ssh: str = "ssh",
        connect_timeout: int = 10,
        server_alive_interval: int = 5,
        server_alive_count: int = 2,
        control_dir: str | None = None,
    ) -> None:
        if host.is_local:
            raise ValueError(f"{host.name} is this machine: use TmuxRunner")
        super().__init__(host.server, host.tmux)
        self.host = host
        self.ssh = ssh
        self.connect_timeout = connect_timeout
        self.server_alive_interval = server_alive_interval
        self.server_alive_count = server_alive_count
        self._control_dir = control_dir
        self._own_dir = control_dir is None
        self._dir_lock = threading.Lock()
        self._master: subprocess.Popen[bytes] | None = None
        """The ssh that holds this host's connection (ControlMaster): our child, tied to us."""
        self._master_lock = threading.Lock()
        """Held while the master is made or ended: other threads wait for it, never make a second."""
        self._starting: subprocess.Popen[bytes] | None = None
        """A master still connecting (`close` ends it rather than wait for a host that hangs)."""
        self._spawned: subprocess.Popen[bytes] | None = None
        """A master `begin_connect` started, its login not yet waited for."""
        self._failed_at: float | None = None
        self._closed = False
        self._fresh: _Connected | None = None
        """A connection made on behalf of some command, its news not yet taken by `prepare`."""
        self._prefetched: _Connected | None = None
        self.last_prepare: PrepareResult | None = None
        self.reaped: list[int] = []
        """Every orphaned control client this runner stopped (remote pids), for tests and logs."""

    # -- command lines -------------------------------------------------------------------

    @property
    def control_dir(self) -> str:
        """The private folder of the ControlMaster socket (made on first use, mode 0700)."""
        with self._dir_lock:
            if self._control_dir is None:
                base = runtime_dir() or tempfile.gettempdir()
                self._control_dir = tempfile.mkdtemp(prefix="nbs-tui-ssh-", dir=base)
            return self._control_dir

    def control_path(self) -> str:
        if self._closed and self._control_dir is None:
            return "none"  # closed: a late command connects on its own, making no folder again
        # %C: a hash of the connection (host, port, user): short enough for a socket path.
        return os.path.join(self.control_dir, "%C")

    def ssh_argv(self, remote_command: str, *extra: str, master: bool = False) -> list[str]:
        """``ssh ... DEST -- remote_command`` with the options every ssh of this host shares:
        a session on this host's master (``master``: the master itself)."""
        return [
            self.ssh,
            "-o", "BatchMode=yes",
            "-o", f"ControlPath={self.control_path()}",
            # Only our master (a child of ours, tied to us) holds the connection; a session
            # never becomes a master, and no master outlives us in the background.
            "-o", f"ControlMaster={'yes' if master else 'no'}",
            "-o", "ControlPersist=no",
            *self.host.ssh_options,
            "-o", f"ConnectTimeout={self.connect_timeout}",
            "-o", f"ServerAliveInterval={self.server_alive_interval}",
            "-o", f"ServerAliveCountMax={self.server_alive_count}",
            *extra,
            "-T", "-e", "none",
            self.host.destination,
            "--",
            remote_command,
        ]  # fmt: skip

    def _tmux_words(self, args: Sequence[str]) -> list[str]:
        return [self.host.tmux, "-u", *self.server.tmux_args(), *args]

    def remote_tmux(self, args: Sequence[str]) -> str:
        """The remote shell command that runs tmux with ``args`` (each word quoted for sh)."""
        return shlex.join(self._tmux_words(args))

    def argv(self, args: Sequence[str]) -> list[str]:
        """A one-off tmux command's ssh; waits for (or makes) this host's connection first, so
        that it rides on the master instead of logging in on its own."""
        self._ensure_connection()
        return self.ssh_argv(self.remote_tmux(args))

    def control_argv(self, session_id: str, flags: str = "ignore-size") -> list[str]:
        """A control client on the host that dies with its ssh session (`TIED_CLIENT`). Built
        without waiting: the fleet attaches once it has listed panes over the connection."""
        tmux = self._tmux_words(["-C", "attach-session", "-f", flags, "-t", session_id])
        return self.ssh_argv(shlex.join(["exec", "sh", "-c", TIED_CLIENT, "nbs-tui-control", *tmux]))

    def describe(self) -> str:
        return f"{self.host.name}: {self.server.describe()}"

    def explain(self, returncode: int, stderr: str) -> str:
        return explain_failure(self.host, returncode, stderr)

    def lost_connection(self, returncode: int | None) -> bool:
        """Whether a control client's exit status means the connection (not tmux) ended."""
        return returncode is not None and (returncode == SSH_FAILED or returncode < 0)

    def lost_message(self) -> str:
        return f"{self.host.name}: connection to {self.host.destination} lost"

    # -- commands ------------------------------------------------------------------------

    def run(self, *args: str, timeout: float = 5.0, stdin: bytes | None = None) -> str:
        if args == _LIST_PANES and stdin is None:
            listing = self._take_prefetched_listing()
            if listing is not None:
                return listing
        return self._ssh(self.remote_tmux(args), max(timeout, self.connect_timeout + 5.0), stdin)

    def _ssh(self, remote_command: str, timeout: float, stdin: bytes | None = None) -> str:
        self._ensure_connection()
        return self._exec(remote_command, timeout, stdin)

    def _exec(self, remote_command: str, timeout: float, stdin: bytes | None = None) -> str:
        """One ssh session running ``remote_command`` (tmux, or a script): its stdout, or the
        failure as one typed error (`TmuxRunner.execute`, the one place a command runs)."""
        return self.execute(self.ssh_argv(remote_command), timeout=timeout, stdin=stdin)

    def run_script(self, script: str, timeout: float = 30.0, stdin: bytes | None = None) -> str:
        """A shell script on the host, over the same ControlMaster connection: its stdout
        (``nbs-tui new --host``'s checks of the folder and Claude Code there)."""
        return self._ssh(script, max(timeout, self.connect_timeout + 5.0), stdin)

    def missing(self, program: str) -> TmuxError:
        return self._no_ssh()

    def no_answer(self, timeout: float) -> str:
        return f"{self.host.name}: {self.host.destination} did not answer within {timeout:.0f}s"

    def failure(self, returncode: int, stderr: str) -> TmuxError:
        if returncode == 127:  # the host has no tmux (on the PATH of a non-interactive shell)
            return HostUnreachable(self.explain(returncode, stderr))
        return super().failure(returncode, stderr)

    def _fail(self, returncode: int, stderr: str) -> NoReturn:
        raise self.failure(returncode, stderr)

    def _no_ssh(self) -> HostUnreachable:
        return HostUnreachable(f"{self.host.name}: ssh is not installed ({self.ssh!r} not found)")

    max_backoff: float | None = 30.0

    # -- the connection ------------------------------------------------------------------

    def prepare(self) -> list[str]:
        """Connect (or reuse the connection), check tmux, reap orphaned control clients, and
        list the panes with their agent verdicts, all in one round trip (the fleet's first
        discovery after this takes that listing, `PREFETCH_FRESH`)."""
        with self._master_lock:
            self._closed = False
            fresh, self._fresh = self._fresh, None
            if fresh is not None and self._master_alive() and time.monotonic() - fresh.at < PREFETCH_FRESH:
                connected = fresh  # made a moment ago for another command: nothing new to ask
            elif self._master_alive():
                connected = self._parse_connect(self._exec(self._connect_script(hold=False), self.connect_timeout + 5.0))
            else:
                connected = self._start_master()
            self._prefetched = connected
        self.last_prepare = connected.result
        return list(connected.result.notes)

    def _master_alive(self) -> bool:
        master = self._master
        return master is not None and master.poll() is None

    def _ensure_connection(self) -> None:
        """Make sure a command about to run finds the master: wait while another thread makes
        it, or make it (a command asked before the fleet's first `prepare`: the lease's, say).
        On failure the command runs on its own and fails with its own message."""
        if self._closed or self._master_alive():
            return
        with self._master_lock:
            if self._closed or self._master_alive():
                return
            if self._failed_at is not None and time.monotonic() - self._failed_at < RECONNECT_QUIET:
                return
            try:
                self._fresh = self._start_master()
            except TmuxError as exc:
                log.info("%s: no connection for a command: %s", self.host.name, exc)

    def _connect_script(self, *, hold: bool) -> str:
        return connect_script(self.host.tmux, self._list_clients(), self.remote_tmux(_LIST_PANES), hold=hold)

    def _parse_connect(self, out: str) -> _Connected:
        head, listing, verdicts = split_connect_output(out)
        result = PrepareResult(reaped=reaped("\n".join(head)))
        self.reaped.extend(result.reaped)
        for line in head:
            if result.version is None and line.startswith("tmux"):
                result.version = parse_version(line)
        name, dest = self.host.name, self.host.destination
        if result.version is not None and result.version < MIN_TMUX:
            have = ".".join(map(str, result.version))
            need = ".".join(map(str, MIN_TMUX))
            raise HostUnreachable(f"{name}: tmux {have} on {dest} is too old (nbs-tui needs {need} or newer)")
        local = local_tmux_version()
        if result.version is not None and local is not None and result.version < local:
            result.notes.append(
                f"{name}: tmux {'.'.join(map(str, result.version))} on {dest} is older than this "
                f"machine's {'.'.join(map(str, local))}"
            )
        if result.reaped:
            log.warning("%s: reaped orphaned tmux control clients %s", name, result.reaped)
            result.notes.append(
                f"{name}: stopped {len(result.reaped)} orphaned tmux control client(s) left by an "
                "earlier connection (they froze the host's panes)"
            )
        return _Connected(result, listing, verdicts)

    def begin_connect(self) -> None:
        """Start this host's login now and return at once (`preconnect`): the master's ssh is
        started on the calling thread, and the next `_ensure_connection` or `prepare` waits for
        its login instead of starting another. A failure to start it is left to that call."""
        with self._master_lock:
            if self._closed or self._spawned is not None or self._master_alive():
                return
            try:
                self._spawned = self._spawn_master()
            except TmuxError as exc:
                log.info("%s: could not start connecting: %s", self.host.name, exc)

    def _spawn_master(self) -> subprocess.Popen[bytes]:
        """Start the master's ssh (``_master_lock`` held); `_start_master` waits for its login."""
        self._stop_master()
        self._remove_sockets()
        log_path = os.path.join(self.control_dir, "master.log")
        try:
            with open(log_path, "wb") as errors:
                return popen_tied(
                    self.ssh_argv(self._connect_script(hold=True), master=True),
                    stdin=subprocess.PIPE,  # never written: its end is the connection's end
                    stdout=subprocess.PIPE,
                    stderr=errors,
                    env=self.env(),
                    start_new_session=True,
                )
        except FileNotFoundError as exc:
            self._failed_at = time.monotonic()
            raise self._no_ssh() from exc

    def _start_master(self) -> _Connected:
        """Start this host's master (``_master_lock`` held), or take the one `begin_connect`
        started: an ssh of ours, tied to us (`popen_tied`), whose own session runs the connect
        script and then holds the connection open. Every other ssh of the host is a session on it."""
        master, self._spawned = self._spawned, None
        if master is None:
            master = self._spawn_master()
        log_path = os.path.join(self.control_dir, "master.log")
        timeout = self.connect_timeout + 5.0
        began = time.monotonic()
        self._starting = master
        try:
            out, said = _read_through(master, CONNECTED.encode(), timeout)
        finally:
            self._starting = None
        try:
            if self._closed:
                raise HostUnreachable(f"{self.host.name}: closed while connecting")
            if not said:
                try:
                    returncode = master.wait(5.0 if master.poll() is not None or not out else 0.5)
                except subprocess.TimeoutExpired:
                    master.kill()
                    master.wait()
                    raise HostUnreachable(
                        f"{self.host.name}: {self.host.destination} did not answer within {timeout:.0f}s"
                    ) from None
                with open(log_path, "rb") as errors:
                    self._fail(returncode, errors.read().decode("utf-8", "replace"))
            self._master = master
            connected = self._parse_connect(out.decode("utf-8", "replace"))
        except TmuxError:
            self._failed_at = time.monotonic()
            self._stop_master()
            if master.poll() is None:
                master.kill()
                master.wait()
            raise
        self._failed_at = None
        log.info("%s: connected in %.0f ms (master pid %d)", self.host.name, (time.monotonic() - began) * 1000, master.pid)
        return connected

    def _stop_master(self) -> None:
        master, self._master = self._master, None
        if master is None:
            return
        with contextlib.suppress(OSError):
            if master.stdin is not None:
                master.stdin.close()
        if master.poll() is None:
            master.terminate()  # ssh ends its sessions and removes the socket
        try:
            master.wait(5.0)
        except subprocess.TimeoutExpired:
            master.kill()
            master.wait()
        if master.stdout is not None:
            master.stdout.close()

    def _remove_sockets(self) -> None:
        """A master killed outright leaves its socket: a new one could not listen there."""
        with contextlib.suppress(OSError), os.scandir(self.control_dir) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    if stat.S_ISSOCK(entry.stat(follow_symlinks=False).st_mode):
                        os.unlink(entry.path)

    def _take_prefetched_listing(self) -> str | None:
        connected = self._prefetched
        if connected is None or connected.listing is None or time.monotonic() - connected.at > PREFETCH_FRESH:
            return None
        listing, connected.listing = connected.listing, None
        return listing

    def _list_clients(self) -> str:
        return self.remote_tmux(["list-clients", "-F", "#{client_pid} #{client_control_mode}"])

    def reap(self) -> list[int]:
        """Stop orphaned control clients now (the fleet calls this when a client of a lost
        connection is still listed after reconnecting: sshd may notice the loss late)."""
        script = REAP.format(list_clients=self._list_clients()) + "exit 0\n"
        stopped = reaped(self._ssh(script, self.connect_timeout + 5.0))
        if stopped:
            log.warning("%s: reaped orphaned tmux control clients %s", self.host.name, stopped)
            self.reaped.extend(stopped)
        return stopped

    def detect_agents(self, panes: Sequence[PaneInfo]) -> dict[str, bool]:
        """Walk the panes' process trees on the host, in one round trip (only for panes whose
        first process or command changed, or whose title came to look like Claude Code's:
        discovery caches the verdicts, see `nbs_tui.tmux.discovery.AgentKey`). Right after a
        connect the connect script's verdicts answer, once."""
        pids = sorted({p.pid for p in panes if p.pid > 0 and not p.dead})
        if not pids:
            return {}
        connected = self._prefetched
        if connected is not None and connected.verdicts and time.monotonic() - connected.at <= PREFETCH_FRESH:
            known, connected.verdicts = connected.verdicts, {}
            if all(pid in known for pid in pids):
                return {p.pane_id: known[p.pid] for p in panes if p.pid in known}
        try:
            out = self._ssh(AGENTS.format(pids=shlex.quote(" ".join(map(str, pids)))), self.connect_timeout + 5.0)
        except TmuxError as exc:
            log.warning("agent detection on %s failed: %s", self.host.name, exc)
            return {}
        verdicts = parse_agents(out)
        return {p.pane_id: verdicts[p.pid] for p in panes if p.pid in verdicts}

    def master_pid(self) -> int | None:
        """The pid of this host's ControlMaster ssh, or None when there is none."""
        master = self._master
        return master.pid if master is not None and master.poll() is None else None

    def close(self) -> None:
        """End the shared connection (its master, and with it every session on it) and remove
        the private folder. A later `prepare` connects again."""
        self._closed = True
        starting = self._starting
        if starting is not None and starting.poll() is None:
            starting.kill()  # a connect that hangs (a host that accepts and says nothing) ends now
        with self._master_lock:
            self._fresh = self._prefetched = None
            spawned, self._spawned = self._spawned, None
            if spawned is not None:  # started by begin_connect, never waited for
                spawned.kill()
                spawned.wait()
                for pipe in (spawned.stdin, spawned.stdout):
                    if pipe is not None:
                        pipe.close()
            self._stop_master()
            if self._own_dir and self._control_dir is not None:
                shutil.rmtree(self._control_dir, ignore_errors=True)
                self._control_dir = None


def _read_through(proc: subprocess.Popen[bytes], marker: bytes, timeout: float) -> tuple[bytes, bool]:
    """Read ``proc``'s stdout up to a line that is ``marker``: (what came before it, True), or
    (all that came, False) at its end or after ``timeout`` seconds."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    deadline = time.monotonic() + timeout
    data = b""
    while True:
        found = (b"\n" + data).find(b"\n" + marker + b"\n")
        if found >= 0:
            return data[:found], True
        left = deadline - time.monotonic()
        if left <= 0:
            return data, False
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return data, False
        data += chunk


_early: dict[SshHost, SshTmuxRunner] = {}
_early_lock = threading.Lock()


def preconnect(hosts: Sequence[SshHost]) -> None:
    """Start connecting to every remote host now: the CLI calls this before it imports the
    dashboard, so the logins overlap those imports (~0.4 s) instead of following them. Each
    master's ssh starts here, on the calling thread (which would otherwise hold the GIL for the
    imports that follow, each start waiting for it: the fifth began ~50 ms after the first); a
    thread each waits for the logins. `runner_for` hands the runner (connected, or still
    connecting) to the runtime; one never claimed is closed at exit."""
    started = []
    for host in hosts:
        if host.is_local:
            continue
        with _early_lock:
            if host in _early:
                continue
            if not _early:
                atexit.register(_close_unclaimed)
            runner = _early[host] = SshTmuxRunner(host)
        runner.begin_connect()
        started.append(runner)
    for runner in started:
        name = f"nbs-ssh-connect-{runner.host.name}"
        threading.Thread(target=runner._ensure_connection, name=name, daemon=True).start()


def runner_for(host: SshHost) -> SshTmuxRunner:
    """The runner of ``host``: the one `preconnect` started for it, else a new one."""
    with _early_lock:
        runner = _early.pop(host, None)
    return runner if runner is not None else SshTmuxRunner(host)


def _close_unclaimed() -> None:
    with _early_lock:
        runners = list(_early.values())
        _early.clear()
    for runner in runners:
        runner.close()
