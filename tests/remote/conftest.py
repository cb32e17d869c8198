"""A real OpenSSH server on loopback, run by the test itself, with two "hosts".

Each host is its own ``sshd -D`` on a private port of 127.0.0.1 with its own host key, and its
own tmux server: sshd sets ``TMUX_TMPDIR`` (``SetEnv``) to a folder of that host's, so the
default tmux socket of one host is not the other's. The client side is one ``ssh -F CONFIG``
file: aliases ``hosta`` and ``hostb``, a key generated for the test, a private known_hosts with
both host keys, ``StrictHostKeyChecking yes``. Faulty aliases for the error messages:
``hostunknown`` (host key not in known_hosts), ``hostnokey`` (a key the server does not
accept), ``hostrefused`` (a port nobody listens on).

As root, each sshd runs in a mount namespace of its own (``unshare --mount``), the same as this
machine's until a test calls `Host.private_folder`: a folder the host sees and this machine does
not (on one machine, the only way a read "on the host" can differ from a read here).

As root, sshd allows root with this key only (``PermitRootLogin prohibit-password``,
``from="127.0.0.1"`` on the key); as another user, sshd runs unprivileged for that user.
Teardown stops every process this fixture started (sshd, its sessions, the hosts' tmux
servers, anything with the fixture's marker in its environment) and fails if one is left.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import cannot_run
from tests.tmux.fleet_helpers import process_alive

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
MARK = "NBS_TEST_SSH_MARK"
"""Set in the environment of everything started here (client side and, by SetEnv, server side)."""


@dataclass
class Host:
    """One test host: an ssh alias with its sshd and its own tmux server."""

    alias: str
    port: int
    tmux_tmpdir: Path
    sshd: subprocess.Popen[bytes] | None = None
    log: Path | None = None
    sshd_config: Path | None = None
    own_mounts: bool = False
    """sshd (so every ssh session, and a tmux server one starts) runs in a mount namespace of its
    own (root only): `private_folder` can then show the host a folder this machine does not see."""

    def launch_sshd(self) -> None:
        """Start this host's sshd (again, after `kill_sshd`) and wait until it listens."""
        assert self.sshd_config is not None and self.log is not None
        # unshare execs sshd (no fork): the Popen's pid is sshd's
        own = ["unshare", "--mount", "--propagation", "private"] if self.own_mounts else []
        self.sshd = subprocess.Popen(
            [*own, SSHD, "-D", "-e", "-f", str(self.sshd_config), "-E", str(self.log)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        _wait_listening(self)

    def sshd_sessions(self) -> list[int]:
        """The per-connection sshd processes of this host (not the commands they run)."""
        if self.sshd is None:
            return []
        return [pid for pid in _children_of(self.sshd.pid) if _comm(pid) == "sshd"]

    def kill_sshd(self) -> None:
        """SIGKILL the listener and every connection's sshd, as a crash or a reboot would."""
        assert self.sshd is not None
        victims = [self.sshd.pid, *self.sshd_sessions()]
        for pid in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.sshd.wait(10)

    def private_folder(self, path: Path) -> Path:
        """Make ``path`` (a folder, made if missing) show, on this host only, another folder: the
        one returned, ``PATH.on-ALIAS`` beside it, which the test reads. Processes started
        through the host's ssh (and its tmux server, when ssh started it) write there; this
        machine still sees ``path`` as it was. So a file the product reads "on the host" is
        not found by a read made here, as on a real other machine. Skips (fails under CI) when
        the lab cannot (not root, or no mount namespaces)."""
        if not self.own_mounts or self.sshd is None:
            why = "the ssh lab's hosts have no mount namespace of their own (needs root and unshare)"
            if os.environ.get("CI"):
                pytest.fail(f"CI: {why}")
            pytest.skip(why)
        seen = path.with_name(f"{path.name}.on-{self.alias}")
        path.mkdir(parents=True, exist_ok=True)
        seen.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["nsenter", "--target", str(self.sshd.pid), "--mount", "--", "mount", "--bind", str(seen), str(path)],
            check=True, capture_output=True,
        )  # fmt: skip
        return seen

    def enter(self) -> list[str]:
        """A command prefix that runs a process of this machine in the host's mount namespace
        (as the host's own nbs-tui would see its files); empty when the host has none."""
        if not self.own_mounts or self.sshd is None:
            return []
        return ["nsenter", "--target", str(self.sshd.pid), "--mount", "--"]

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.pop("TMUX", None)
        env.pop("TMUX_PANE", None)
        env["TMUX_TMPDIR"] = str(self.tmux_tmpdir)
        return env

    def tmux(self, *args: str, check: bool = True) -> str:
        """Run tmux on this host's server (same machine: the same socket sshd's sessions use)."""
        done = subprocess.run(["tmux", *args], env=self.env(), capture_output=True, check=False)
        if check and done.returncode != 0:
            raise RuntimeError(f"tmux {args} on {self.alias}: {done.stderr.decode().strip()}")
        return done.stdout.decode("utf-8", "replace")


@dataclass
class SshLab:
    root: Path
    config: Path
    user: str
    mark: str
    hosts: dict[str, Host] = field(default_factory=dict)

    @property
    def ssh_options(self) -> tuple[str, ...]:
        return ("-F", str(self.config))

    def ssh(self, alias: str, command: str, timeout: float = 20.0) -> subprocess.CompletedProcess[bytes]:
        """A plain one-off ssh (no multiplexing), for checks made by the test itself."""
        return subprocess.run(
            ["ssh", "-F", str(self.config), "-o", "BatchMode=yes", "-T", alias, "--", command],
            capture_output=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
            check=False,
        )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _keygen(path: Path, comment: str) -> str:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
        check=True,
        stdin=subprocess.DEVNULL,
    )
    return path.with_suffix(".pub").read_text().strip() if path.suffix else Path(f"{path}.pub").read_text().strip()


def _children_of(pid: int) -> list[int]:
    """Every descendant of ``pid`` (read from /proc before anything is killed)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry))
    out: list[int] = []
    todo = [pid]
    while todo:
        for kid in parents.get(todo.pop(), []):
            out.append(kid)
            todo.append(kid)
    return out


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def marked_processes(mark: str, root: Path | None = None) -> list[int]:
    """Processes whose environment carries this lab's marker (or whose command line names the
    lab's folder: ssh masters, whose title overwrites their environment)."""
    needle = f"{MARK}={mark}".encode()
    folder = str(root).encode() if root is not None else None
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0") or (folder is not None and folder in cmdline):
            found.append(int(entry))
    return found


def _start_sshd(lab: SshLab, host: Host, host_key: Path, authorized: Path) -> None:
    config = lab.root / f"sshd_{host.alias}.conf"
    host.log = lab.root / f"sshd_{host.alias}.log"
    lines = [
        f"Port {host.port}",
        "ListenAddress 127.0.0.1",
        f"HostKey {host_key}",
        f"PidFile {lab.root / f'sshd_{host.alias}.pid'}",
        f"AuthorizedKeysFile {authorized}",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "PermitRootLogin prohibit-password",
        f"AllowUsers {lab.user}",
        "StrictModes no",
        "X11Forwarding no",
        "AllowTcpForwarding no",
        "AllowAgentForwarding no",
        "PermitTunnel no",
        "PrintMotd no",
        "LogLevel VERBOSE",
        "PermitUserRC no",
        # A HOME of the lab's (the account's own ~/.bashrc is not the test's: here it runs
        # pyenv hooks that can hang), the host's own tmux server, a UTF-8 locale, and the
        # marker teardown looks for. sshd applies SetEnv after its own HOME, so this wins.
        f"SetEnv HOME={lab.root / 'home'} TMUX_TMPDIR={host.tmux_tmpdir} LANG=C.UTF-8 {MARK}={lab.mark}",
    ]
    config.write_text("\n".join(lines) + "\n")
    host.sshd_config = config
    if os.geteuid() == 0:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)  # privilege separation directory
    host.launch_sshd()


def _wait_listening(host: Host, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert host.sshd is not None
        if host.sshd.poll() is not None:
            log = host.log.read_text() if host.log and host.log.exists() else ""
            raise RuntimeError(f"sshd for {host.alias} exited {host.sshd.returncode}: {log[-2000:]}")
        with socket.socket() as s, contextlib.suppress(OSError):
            s.settimeout(0.2)
            s.connect(("127.0.0.1", host.port))
            banner = s.recv(64)
            if banner.startswith(b"SSH-"):
                return
        time.sleep(0.02)
    raise RuntimeError(f"sshd for {host.alias} did not listen on {host.port} within {timeout}s")


def _teardown(lab: SshLab) -> list[str]:
    """Stop everything; return what could not be stopped (empty when clean)."""
    victims: set[int] = set()
    for host in lab.hosts.values():
        if host.sshd is not None:
            victims.update(_children_of(host.sshd.pid))
        host.tmux("kill-server", check=False)
    for host in lab.hosts.values():
        if host.sshd is not None and host.sshd.poll() is None:
            host.sshd.terminate()
    victims.update(marked_processes(lab.mark, lab.root))
    for pid in victims:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    for host in lab.hosts.values():
        if host.sshd is not None:
            try:
                host.sshd.wait(5.0)
            except subprocess.TimeoutExpired:
                host.sshd.kill()
                host.sshd.wait()
    deadline = time.monotonic() + 5.0
    left = [p for p in victims | set(marked_processes(lab.mark, lab.root)) if process_alive(p)]
    while left and time.monotonic() < deadline:
        time.sleep(0.05)
        left = [p for p in left if process_alive(p)]
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    described = []
    for pid in left:
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:
            cmd = "?"
        described.append(f"{pid} {cmd}")
    return described


@contextlib.contextmanager
def running_lab(aliases: tuple[str, ...] = ("hosta", "hostb")) -> Iterator[SshLab]:
    """The lab outside pytest too (bench/bench_remote.py): sets the marker in os.environ while
    it runs, stops everything on exit, and raises if a process was left behind."""
    if not Path(SSHD).exists():
        raise RuntimeError("sshd is not installed (scripts/test installs openssh-server)")
    # Short paths: tmux sockets and ssh ControlPath live under here (sun_path is 108 bytes).
    base = Path(os.environ.get("XDG_RUNTIME_DIR") or "/tmp")
    root = Path(tempfile.mkdtemp(prefix="nbs-ssh-", dir=base if base.is_dir() else "/tmp"))
    root.chmod(0o700)
    mark = uuid.uuid4().hex
    saved = {key: os.environ.get(key) for key in (MARK, "XDG_RUNTIME_DIR")}
    os.environ[MARK] = mark  # the client-side ssh processes carry it too
    # ssh masters' ControlPath folders go in here: a master rewrites its title and its environ
    # (setproctitle), so teardown finds it by this path in its command line.
    os.environ["XDG_RUNTIME_DIR"] = str(root)
    (root / "home").mkdir()
    lab = SshLab(root=root, config=root / "ssh_config", user=getpass.getuser(), mark=mark)
    try:
        _build(lab, aliases)
        yield lab
    finally:
        left = _teardown(lab)
        shutil.rmtree(root, ignore_errors=True)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        assert not left, f"processes left behind by the ssh lab: {left}"


@pytest.fixture
def ssh_lab(monkeypatch: pytest.MonkeyPatch) -> Iterator[SshLab]:
    if not Path(SSHD).exists():
        cannot_run("sshd is not installed (scripts/test installs openssh-server)")
    with running_lab() as lab:
        # Panes the test starts get the lab's HOME too (no ~/.bashrc of the account's).
        monkeypatch.setenv("HOME", str(lab.root / "home"))
        yield lab


def _mount_namespaces() -> bool:
    """Whether this process may give a host's sshd a mount namespace of its own."""
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("nsenter"):
        return False
    probe = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"], capture_output=True, check=False)
    return probe.returncode == 0


def _build(lab: SshLab, aliases: tuple[str, ...]) -> None:
    """Keys, two sshd hosts, the client's ssh config and known_hosts."""
    root = lab.root
    user_key = root / "id_test"
    _keygen(user_key, "nbs-tui-test")
    stranger_key = root / "id_stranger"
    _keygen(stranger_key, "nbs-tui-stranger")
    authorized = root / "authorized_keys"
    authorized.write_text(f'from="127.0.0.1" {Path(f"{user_key}.pub").read_text().strip()}\n')
    authorized.chmod(0o600)

    known: list[str] = []
    own_mounts = _mount_namespaces()
    for alias in aliases:
        tmpdir = root / f"tmux-{alias}"
        tmpdir.mkdir(mode=0o700)
        host = Host(alias=alias, port=_free_port(), tmux_tmpdir=tmpdir, own_mounts=own_mounts)
        host_key = root / f"hostkey_{alias}"
        _keygen(host_key, alias)
        known.append(f"[127.0.0.1]:{host.port} {Path(f'{host_key}.pub').read_text().split(' ', 2)[0]} "
                     f"{Path(f'{host_key}.pub').read_text().split(' ', 2)[1]}")
        lab.hosts[alias] = host  # before it starts: teardown stops what was started
        _start_sshd(lab, host, host_key, authorized)
    (root / "known_hosts").write_text("\n".join(known) + "\n")
    (root / "known_hosts_empty").write_text("")

    def block(alias: str, port: int, key: Path, known_hosts: Path) -> str:
        return "\n".join(
            [
                f"Host {alias}",
                "  HostName 127.0.0.1",
                f"  Port {port}",
                f"  User {lab.user}",
                f"  IdentityFile {key}",
                "  IdentitiesOnly yes",
                "  IdentityAgent none",
                f"  UserKnownHostsFile {known_hosts}",
                "  GlobalKnownHostsFile /dev/null",
                "  StrictHostKeyChecking yes",
                "  UpdateHostKeys no",
                "  CheckHostIP no",
                "  LogLevel ERROR",
                "",
            ]
        )

    first = lab.hosts[aliases[0]]
    lab.config.write_text(
        "".join(block(alias, host.port, user_key, root / "known_hosts") for alias, host in lab.hosts.items())
        + block("hostunknown", first.port, user_key, root / "known_hosts_empty")
        + block("hostnokey", first.port, stranger_key, root / "known_hosts")
        + block("hostrefused", _free_port(), user_key, root / "known_hosts")
    )
