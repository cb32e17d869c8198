"""tmux on another host, through the user's own OpenSSH client.

A `SshHost` (a `nbs_tui.core.hosts.HostSpec`) names a host the way OpenSSH does (``user@box``, an alias of ``~/.ssh/config`` with
its keys, agent and ProxyJump). `SshTmuxRunner` is the `TmuxRunner` of that host: every tmux
command line becomes ``ssh [options] -T -e none DEST -- 'tmux -u [-L|-S] ...'``.

* **One connection per host.** All ssh processes of a host share one multiplexed connection
  (``ControlMaster=auto``, ``ControlPath`` in a private 0700 folder of ours under
  ``$XDG_RUNTIME_DIR`` or the temp folder, ``ControlPersist`` so the master outlives the first
  command and ends by itself a minute after nbs-tui if nbs-tui dies). A control client over it
  attaches in ~0.3 s on a new connection and a few ms on an open one.
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
  SIGTERM does. tmux releases up to 3.7c have this bug.

Options the user gives (``ssh_options``) come after the ones nbs-tui must hold (``BatchMode``,
the ``ControlPath``) and before its defaults: ssh takes the first value of an option, so a user
can change the keep-alive or timeouts but never get a password prompt under the dashboard.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shlex
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from nbs_tui.core.hosts import HostSpec
from nbs_tui.core.model import PaneInfo, ServerAddress
from nbs_tui.logs import runtime_dir
from nbs_tui.tmux.errors import HostUnreachable, TmuxError
from nbs_tui.tmux.runner import TmuxRunner

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


_REAP = r"""
{list_clients} 2>/dev/null | while read -r pid control; do
  [ "$control" = 1 ] || continue
  ppid=$(sed 's/.*) [^ ]* //;s/ .*//' "/proc/$pid/stat" 2>/dev/null || ps -o ppid= -p "$pid" 2>/dev/null)
  if [ "$(echo $ppid)" = 1 ] && kill -TERM "$pid" 2>/dev/null; then echo "reaped $pid"; fi
done
exit 0
"""
"""Stop orphaned control clients: a control client whose parent is PID 1 (its ssh session is gone)."""

_PREPARE = r"""
command -v {tmux} >/dev/null 2>&1 || {{ echo "{tmux}: command not found" >&2; exit 127; }}
{tmux} -V
""" + _REAP
"""One round trip on (re)connect: is tmux there, which version, and reap orphans."""


_AGENTS = r"""
if command -v ps >/dev/null 2>&1; then ps -e -o pid= -o ppid= -o args=; else
  for d in /proc/[0-9]*; do
    ppid=$(sed 's/.*) [^ ]* //;s/ .*//' "$d/stat" 2>/dev/null) || continue
    printf '%s %s %s\n' "${{d#/proc/}}" "$ppid" "$(tr '\0' ' ' < "$d/cmdline" 2>/dev/null)"
  done
fi | awk -v want={pids} '
function claude(a,   k, m, i, base, first) {{
  m = split(a, k, " ")
  for (i = 1; i <= m && i <= 4; i++) {{
    base = k[i]; sub(/.*\//, "", base)
    if (i == 1) first = base
    if (i == 1 && base == "claude") return 1
    if (i > 1 && base == "claude" && (first == "node" || first == "bun" || first == "deno")) return 1
    if (i == 2 && base == "claude" && first ~ /^(python[0-9.]*|sh|bash|env)$/) return 1
    if (k[i] ~ /claude-code/ && k[i] ~ /\.(js|mjs|cjs)$/) return 1
    if (k[i] == "nbs_tui.demo.agent") return 1
  }}
  return 0
}}
{{ pid = $1; pp = $2; $1 = ""; $2 = ""; sub(/^ +/, ""); args[pid] = $0; kids[pp] = kids[pp] " " pid }}
END {{
  n = split(want, w, " ")
  for (j = 1; j <= n; j++) {{
    queue = w[j]; seen = 0; hit = 0
    while (queue != "" && seen < 64 && !hit) {{
      cur = queue; sub(/ .*/, "", cur); sub(/^[^ ]+ */, "", queue); seen++
      if ((cur in args) && claude(args[cur])) hit = 1
      queue = queue kids[cur]; sub(/^ +/, "", queue)
    }}
    print w[j], ((w[j] in args) ? hit : "gone")
  }}
}}'
"""
"""Which of the given pane pids has Claude Code (or the demo agent) in its process tree, on the
host: the remote half of `nbs_tui.tmux.discovery.agent_verdict` (``ps``, else ``/proc``; POSIX awk).
The local walk also trusts a process named ``claude`` (its comm); here a script named ``claude``
shows as ``INTERPRETER .../claude``, so that form counts too.
Prints ``PID 1``, ``PID 0`` or ``PID gone`` per pid."""


def parse_agents(out: str) -> dict[int, bool]:
    found: dict[int, bool] = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0].isdigit() and parts[1] in ("0", "1"):
            found[int(parts[0])] = parts[1] == "1"
    return found


@dataclass
class PrepareResult:
    version: tuple[int, int] | None = None
    reaped: list[int] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Things the operator should know that do not stop the host (e.g. an older tmux)."""


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
        persist: int = 60,
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
        self.persist = persist
        self._control_dir = control_dir
        self._own_dir = control_dir is None
        self._dir_lock = threading.Lock()
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
        # %C: a hash of the connection (host, port, user): short enough for a socket path.
        return os.path.join(self.control_dir, "%C")

    def ssh_argv(self, remote_command: str, *extra: str) -> list[str]:
        """``ssh ... DEST -- remote_command`` with the options every ssh of this host shares."""
        return [
            self.ssh,
            "-o", "BatchMode=yes",
            "-o", f"ControlPath={self.control_path()}",
            *self.host.ssh_options,
            "-o", "ControlMaster=auto",
            "-o", f"ControlPersist={self.persist}",
            "-o", f"ConnectTimeout={self.connect_timeout}",
            "-o", f"ServerAliveInterval={self.server_alive_interval}",
            "-o", f"ServerAliveCountMax={self.server_alive_count}",
            *extra,
            "-T", "-e", "none",
            self.host.destination,
            "--",
            remote_command,
        ]  # fmt: skip

    def remote_tmux(self, args: Sequence[str]) -> str:
        """The remote shell command that runs tmux with ``args`` (each word quoted for sh)."""
        return shlex.join([self.host.tmux, "-u", *self.server.tmux_args(), *args])

    def argv(self, args: Sequence[str]) -> list[str]:
        return self.ssh_argv(self.remote_tmux(args))

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
        return self._ssh(self.remote_tmux(args), max(timeout, self.connect_timeout + 5.0), stdin)

    def _ssh(self, remote_command: str, timeout: float, stdin: bytes | None = None) -> str:
        """Run a command line (tmux, or a script) on the host: its stdout (`TmuxRunner.execute`)."""
        return self.execute(self.ssh_argv(remote_command), timeout=timeout, stdin=stdin)

    def run_script(self, script: str, timeout: float = 30.0, stdin: bytes | None = None) -> str:
        """A shell script on the host, over the same ControlMaster connection: its stdout
        (``nbs-tui new --host``'s checks of the folder and Claude Code there)."""
        return self._ssh(script, max(timeout, self.connect_timeout + 5.0), stdin)

    def missing(self, program: str) -> TmuxError:
        return HostUnreachable(f"{self.host.name}: ssh is not installed ({program!r} not found)")

    def no_answer(self, timeout: float) -> str:
        return f"{self.host.name}: {self.host.destination} did not answer within {timeout:.0f}s"

    def failure(self, returncode: int, stderr: str) -> TmuxError:
        if returncode == 127:  # the host has no tmux (on the PATH of a non-interactive shell)
            return HostUnreachable(self.explain(returncode, stderr))
        return super().failure(returncode, stderr)

    max_backoff: float | None = 30.0

    def prepare(self) -> list[str]:
        """Connect (or reuse the connection), check tmux, reap orphaned control clients."""
        self.last_prepare = self.connect()
        return list(self.last_prepare.notes)

    def _list_clients(self) -> str:
        return self.remote_tmux(["list-clients", "-F", "#{client_pid} #{client_control_mode}"])

    @staticmethod
    def _reaped(out: str) -> list[int]:
        pids = []
        for line in out.splitlines():
            if line.startswith("reaped "):
                with contextlib.suppress(ValueError):
                    pids.append(int(line.split()[1]))
        return pids

    def reap(self) -> list[int]:
        """Stop orphaned control clients now (the fleet calls this when a client of a lost
        connection is still listed after reconnecting: sshd may notice the loss late)."""
        reaped = self._reaped(self._ssh(_REAP.format(list_clients=self._list_clients()), self.connect_timeout + 5.0))
        if reaped:
            log.warning("%s: reaped orphaned tmux control clients %s", self.host.name, reaped)
            self.reaped.extend(reaped)
        return reaped

    def connect(self) -> PrepareResult:
        tmux = shlex.quote(self.host.tmux)
        script = _PREPARE.format(tmux=tmux, list_clients=self._list_clients())
        out = self._ssh(script, self.connect_timeout + 5.0)
        result = PrepareResult(reaped=self._reaped(out))
        self.reaped.extend(result.reaped)
        for line in out.splitlines():
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
        return result

    def detect_agents(self, panes: Sequence[PaneInfo]) -> dict[str, bool]:
        """Walk the panes' process trees on the host, in one round trip (only for panes whose
        first process or command changed: discovery caches the verdicts)."""
        pids = sorted({p.pid for p in panes if p.pid > 0 and not p.dead})
        if not pids:
            return {}
        try:
            out = self._ssh(_AGENTS.format(pids=shlex.quote(" ".join(map(str, pids)))), self.connect_timeout + 5.0)
        except TmuxError as exc:
            log.warning("agent detection on %s failed: %s", self.host.name, exc)
            return {}
        verdicts = parse_agents(out)
        return {p.pane_id: verdicts[p.pid] for p in panes if p.pid in verdicts}

    def master_pid(self) -> int | None:
        """The pid of this host's ControlMaster ssh, or None when there is none."""
        if self._control_dir is None:
            return None  # never connected: no master (and no folder to make for asking)
        done = subprocess.run(
            [self.ssh, "-o", f"ControlPath={self.control_path()}", *self.host.ssh_options,
             "-O", "check", self.host.destination],
            stdin=subprocess.DEVNULL, capture_output=True, timeout=5, check=False,
        )  # fmt: skip
        found = re.search(rb"pid=(\d+)", done.stderr + done.stdout)
        return int(found.group(1)) if done.returncode == 0 and found else None

    def close(self) -> None:
        """End the shared connection (its master) and remove the private folder."""
        if self._control_dir is None:
            return
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            subprocess.run(
                [self.ssh, "-o", f"ControlPath={self.control_path()}", *self.host.ssh_options,
                 "-O", "exit", self.host.destination],
                stdin=subprocess.DEVNULL, capture_output=True, timeout=5, check=False,
            )  # fmt: skip
        if self._own_dir:
            shutil.rmtree(self._control_dir, ignore_errors=True)
            self._control_dir = None
