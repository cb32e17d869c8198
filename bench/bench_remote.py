"""Hosts through ssh against the same panes watched locally (issue 12, docs/remote.md).

For H in --hosts (default 1 3 5) it starts H "hosts": each a private sshd on loopback with its own
tmux server (the ssh lab of tests/remote), each with --panes panes (default 20) in one session, a
quarter of them writing one ~100-byte line every 100 ms that carries ``T<seq>:<time_ns>``, the
rest idle in ``cat``. Then, on the same panes:

1. **local**: one `TmuxFleet` per host on its tmux socket, in this process;
2. **ssh**: one `TmuxFleet` per host with an `SshTmuxRunner` (a new connection each);
3. **nbs-claude**: the nbs-claude way over ssh: one ``ssh HOST tmux capture-pane -p -t PANE`` per
   pane per second (a thread per host, its panes in turn), every one through that host's
   ControlMaster (started first, so no capture pays for a handshake);
4. **dash-local**: the dashboard itself (``python -m nbs_tui``, `create_app`'s app) in a pty of
   160x48 as bench/bench_app.py runs it, on the first host's tmux socket (``-S``: a dashboard
   watches one local server, so its 20 panes only);
5. **dash-ssh**: the same dashboard on every host through ssh (``[[hosts]]``, ``service = "off"``,
   ``--no-poll``: it watches, types nothing).

For the dashboards, latency is *on screen*: from the marker's write in a pane (the time in the
marker) to the first read of the dashboard's terminal output holding the whole token (the mirror
shows the first pane of the first host, a writer); "connect+seed" is the time to the first full
frame (the status bar counts every pane and a marker is drawn in the mirror), from the launch,
Python's start included (from bytecode, as installed: the checkout is byte-compiled first); CPU is the app's process tree without its ssh clients, which are counted
under ssh with the lab's own.

Reported per mode: time from ``start()`` to every host's panes seeded, write-to-model latency
(``screens_changed`` -> the line is in the `PaneScreen`; first sighting of a pane is its seed and
not counted) median / p99 / max, and CPU (% of one core over the window, from /proc): this process,
the local ssh clients, and the remote side (the sshd sessions and the tmux control clients they
run). Short-lived processes (nbs-claude's ssh clients, and on the host the shells and tmux clients
they run) count through their waiting parent's children times: this process's for the ssh
clients, the sshd sessions' for the remote side. The tmux servers' own CPU is the same work in both modes and is left out.

    .venv/bin/python bench/bench_remote.py                 # 1, 3, 5 hosts x 20 panes, 10 s windows
    .venv/bin/python bench/bench_remote.py --hosts 1 --seconds 5
    .venv/bin/python bench/bench_remote.py --hosts 3 --modes dash-local dash-ssh
    .venv/bin/python bench/bench_remote.py --hosts 5 --modes dash-local dash-ssh --seconds 2 --repeat 8
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_app import compile_checkout  # noqa: E402

from nbs_tui.core.fleet.model import PaneId, PaneInfo, ServerAddress  # noqa: E402
from nbs_tui.tmux.fleet import TmuxFleet  # noqa: E402
from nbs_tui.tmux.port import FleetListener  # noqa: E402
from nbs_tui.tmux.ssh import SshHost, SshTmuxRunner  # noqa: E402
from nbs_tui.tmux.tmux_runner import TmuxRunner  # noqa: E402
from tests.remote.conftest import SshLab, _children_of, marked_processes, running_lab  # noqa: E402

WRITER = r"""
import sys, time
seq = 0
pad = "x" * 70
while True:
    seq += 1
    sys.stdout.write(f"\x1b[32mT{seq}:{time.time_ns()}\x1b[0m {pad}\n")
    sys.stdout.flush()
    time.sleep(0.1)
"""
MARK_RE = re.compile(r"T(\d+):(\d+)")
MODES = ("local", "ssh", "nbs-claude", "dash-local", "dash-ssh")
"""local/ssh/nbs-claude: to the screen model (or capture); dash-*: the dashboard, on screen."""
HZ = os.sysconf("SC_CLK_TCK")


class Latency(FleetListener):
    """A FleetListener that records write-to-model latency of every new marker line."""

    def __init__(self) -> None:
        self.fleet: TmuxFleet | None = None
        self.seen: dict[PaneId, int] = {}
        self.samples: list[float] = []
        self.lock = threading.Lock()
        self.on = False

    def fleet_changed(self, panes: Sequence[PaneInfo]) -> None:
        pass

    def connection_changed(self, connected: bool, message: str) -> None:
        pass

    def screens_changed(self, pane_ids: frozenset[PaneId]) -> None:
        now = time.time_ns()
        fleet = self.fleet
        if fleet is None:
            return
        for pane_id in pane_ids:
            screen = fleet.screen(pane_id)
            if screen is not None:
                self.saw(pane_id, screen.text_lines(), now)

    def saw(self, pane_id: str, rows: Sequence[str], now: int) -> None:
        """The pane's rows as seen at ``now`` (ns): one sample per marker newer than the last."""
        last = self.seen.get(pane_id)
        top = last or 0
        for row in rows:
            found = MARK_RE.match(row)
            if not found:
                continue
            seq, sent = int(found.group(1)), int(found.group(2))
            if seq > top:
                top = seq
                if last is not None and self.on:
                    with self.lock:
                        self.samples.append((now - sent) / 1e6)
        self.seen[pane_id] = top


def cpu_ticks(pids: Sequence[int]) -> dict[int, int]:
    out: dict[int, int] = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        # utime + stime + cutime + cstime: a process's own and its waited-for children's
        out[pid] = int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])
    return out


def remote_side(lab: SshLab) -> list[int]:
    pids: list[int] = []
    for host in lab.hosts.values():
        if host.sshd is not None:
            pids.extend(_children_of(host.sshd.pid))
    return pids


def ssh_clients(lab: SshLab) -> list[int]:
    pids = []
    for pid in marked_processes(lab.mark, lab.root):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == "ssh":
                pids.append(pid)
        except OSError:
            continue
    return pids


def prepare(lab: SshLab, panes: int, script: Path) -> None:
    busy = max(1, panes // 4)
    for host in lab.hosts.values():
        host.tmux("new-session", "-d", "-s", "bench", "-x", "120", "-y", "40", f"{sys.executable} {script}")
        for i in range(1, panes):
            command = f"{sys.executable} {script}" if i < busy else "cat"
            host.tmux("new-window", "-d", "-t", "bench", command)


class Poller:
    """The nbs-claude way on one host: every second, ``ssh HOST tmux capture-pane -p`` for each
    pane in turn, through the host's ControlMaster; records write-to-capture latency."""

    def __init__(self, lab: SshLab, alias: str, control: Path) -> None:
        self.ssh = ["ssh", "-F", str(lab.config), "-o", "BatchMode=yes", "-o", f"ControlPath={control}", "-T", alias]
        self.master = subprocess.Popen(
            [*self.ssh[:-2], "-o", "ControlMaster=yes", "-o", "ControlPersist=no", "-N", alias],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self.control = control
        self.panes: list[str] = []
        self.latency = Latency()
        self.failed = 0
        """Captures that failed (an ssh session refused: MaxSessions, load)."""
        self.seeded = threading.Event()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"poller-{alias}", daemon=True)

    def run(self, *args: str) -> str:
        return subprocess.run(
            [*self.ssh, "--", shlex.join(args)], capture_output=True, text=True, stdin=subprocess.DEVNULL, check=True
        ).stdout

    def start(self) -> None:
        deadline = time.monotonic() + 30
        while not self.control.exists():  # the master is up once its socket is
            if self.master.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ssh master exited {self.master.returncode}")
            time.sleep(0.02)
        self.panes = self.run("tmux", "list-panes", "-a", "-F", "#{pane_id}").split()
        self.thread.start()

    def _run(self) -> None:
        while not self.stopping.is_set():
            began = time.monotonic()
            for pane in self.panes:
                try:
                    text = self.run("tmux", "capture-pane", "-p", "-t", pane)
                except subprocess.CalledProcessError:  # sshd refused a session under load: count it
                    self.failed += 1
                    continue
                self.latency.saw(pane, text.splitlines(), time.time_ns())
            self.seeded.set()
            self.stopping.wait(max(0.0, 1.0 - (time.monotonic() - began)))

    def stop(self) -> None:
        self.stopping.set()
        if self.thread.is_alive():
            self.thread.join(10)
        self.master.terminate()
        try:
            self.master.wait(10)
        except subprocess.TimeoutExpired:
            self.master.kill()
            self.master.wait(10)


def run_mode(lab: SshLab, mode: str, seconds: float) -> dict[str, float]:
    if mode == "nbs-claude":
        return run_pollers(lab, seconds)
    fleets: list[tuple[TmuxFleet, Latency]] = []
    started = time.monotonic()
    for alias, host in lab.hosts.items():
        listener = Latency()
        if mode == "local":
            sock = host.tmux("display-message", "-p", "#{socket_path}").strip()
            runner: TmuxRunner = TmuxRunner(ServerAddress(socket_path=sock))
        else:
            runner = SshTmuxRunner(SshHost(alias, alias, ("-F", str(lab.config))))
        fleet = TmuxFleet(runner.server, (), listener, runner=runner)
        listener.fleet = fleet
        fleet.start()
        fleets.append((fleet, listener))
    for fleet, _ in fleets:
        if not fleet.wait_seeded(60):
            raise RuntimeError(f"{mode}: not seeded within 60 s")
    connect = time.monotonic() - started
    time.sleep(1.0)  # past the start-up backlog
    me = os.getpid()
    pids_ssh, pids_remote = ssh_clients(lab), remote_side(lab)
    t0 = time.monotonic()
    own0 = os.times()
    ssh0, remote0 = cpu_ticks(pids_ssh), cpu_ticks(pids_remote)
    for _, listener in fleets:
        listener.on = True
    time.sleep(seconds)
    for _, listener in fleets:
        listener.on = False
    own1 = os.times()
    ssh1, remote1 = cpu_ticks(pids_ssh), cpu_ticks(pids_remote)
    wall = time.monotonic() - t0
    for fleet, _ in fleets:
        fleet.stop()

    def pct(a: dict[int, int], b: dict[int, int]) -> float:
        return 100.0 * sum(b[p] - a[p] for p in b if p in a) / HZ / wall

    samples = sorted(s for _, listener in fleets for s in listener.samples)
    assert me == os.getpid()
    return summary(connect, samples, own0, own1, wall, pct(ssh0, ssh1), pct(remote0, remote1), pids_ssh, pids_remote)


def summary(
    connect: float, samples: list[float], own0: os.times_result, own1: os.times_result, wall: float,
    cpu_ssh: float, cpu_remote: float, pids_ssh: Sequence[int], pids_remote: Sequence[int], children_are_ssh: bool = False,
) -> dict[str, float]:
    # waited-for children: nbs-claude's short-lived ssh clients, else the fleet's tmux commands
    children = (own1.children_user - own0.children_user) + (own1.children_system - own0.children_system)
    own = (own1.user - own0.user) + (own1.system - own0.system) + (0.0 if children_are_ssh else children)
    return {
        "connect_s": connect,
        "n": len(samples),
        "p50_ms": statistics.median(samples) if samples else float("nan"),
        "p99_ms": samples[int(len(samples) * 0.99)] if samples else float("nan"),
        "max_ms": samples[-1] if samples else float("nan"),
        "cpu_self": 100.0 * own / wall,
        "cpu_ssh": cpu_ssh + (100.0 * children / wall if children_are_ssh else 0.0),
        "cpu_remote": cpu_remote,
        "ssh_processes": len(pids_ssh),
        "remote_processes": len(pids_remote),
    }


def run_pollers(lab: SshLab, seconds: float) -> dict[str, float]:
    folder = Path(tempfile.mkdtemp(prefix="cm-", dir=lab.root))
    pollers = [Poller(lab, alias, folder / alias) for alias in lab.hosts]
    try:
        started = time.monotonic()
        for poller in pollers:
            poller.start()
        for poller in pollers:
            if not poller.seeded.wait(60):
                raise RuntimeError("nbs-claude: no first round within 60 s")
        connect = time.monotonic() - started
        time.sleep(1.0)
        pids_ssh, pids_remote = ssh_clients(lab), remote_side(lab)
        t0 = time.monotonic()
        own0 = os.times()
        ssh0, remote0 = cpu_ticks(pids_ssh), cpu_ticks(pids_remote)
        for poller in pollers:
            poller.latency.on = True
        time.sleep(seconds)
        for poller in pollers:
            poller.latency.on = False
        own1 = os.times()
        ssh1, remote1 = cpu_ticks(pids_ssh), cpu_ticks(pids_remote)
        wall = time.monotonic() - t0
    finally:
        for poller in pollers:
            poller.stop()

    def pct(a: dict[int, int], b: dict[int, int]) -> float:
        return 100.0 * sum(b[p] - a[p] for p in b if p in a) / HZ / wall

    samples = sorted(s for poller in pollers for s in poller.latency.samples)
    failed = sum(poller.failed for poller in pollers)
    if failed:
        print(f"nbs-claude: {failed} captures failed", file=sys.stderr)
    return summary(
        connect, samples, own0, own1, wall, pct(ssh0, ssh1), pct(remote0, remote1), pids_ssh, pids_remote,
        children_are_ssh=True,
    )


# -- the dashboard itself: on-screen latency, its CPU, time to its first full frame -------------

COLS, ROWS = 160, 48
TOKEN = re.compile(rb"T(\d+):(\d{19})")


class Dashboard:
    """The nbs-tui CLI (`create_app`'s app, what ``nbs-tui`` runs) in a pty of COLS x ROWS, as
    bench/bench_app.py runs it. A thread drains its output and keeps, for every marker token it
    draws (whole, in one read or across two), the wall time of the first read holding it; until
    the first full frame (the status bar lists every pane, a marker is drawn in the mirror) the
    bytes also go to a pyte screen."""

    def __init__(self, argv: list[str], env: dict[str, str], panes: int) -> None:
        import fcntl
        import struct
        import termios

        self.panes = panes
        self.drawn: dict[int, int] = {}
        """marker's send time (ns, wall) -> wall ns of the first read that drew it."""
        self.full_frame = threading.Event()
        self.full_frame_ns = 0
        self.listed_ns = 0
        """First frame whose status bar counts every pane."""
        self.painted_ns = 0
        """First frame with a marker drawn in the mirror."""
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        self.master = master
        self.launched_ns = time.monotonic_ns()
        self.proc = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=REPO, start_new_session=True, close_fds=True
        )
        os.close(slave)
        self.tail = b""
        self.reader = threading.Thread(target=self._read, name="pty-reader", daemon=True)
        self.reader.start()

    def _read(self) -> None:
        import pyte

        screen = pyte.Screen(COLS, ROWS)
        stream = pyte.ByteStream(screen)
        want = f" {self.panes} panes"
        carry = b""
        while True:
            try:
                data = os.read(self.master, 1 << 16)
            except OSError:  # EIO: the app closed its terminal
                break
            if not data:
                break
            now = time.time_ns()
            self.tail = (self.tail + data)[-2000:]
            buf = carry + data
            for match in TOKEN.finditer(buf):
                self.drawn.setdefault(int(match.group(2)), now)
            carry = buf[-40:]
            if not self.full_frame.is_set():
                stream.feed(data)
                rows = screen.display
                if not self.listed_ns and any(want in row for row in rows[:2]):
                    self.listed_ns = time.monotonic_ns()
                if not self.painted_ns and any(MARK_RE.search(row[COLS // 3 :]) for row in rows):
                    self.painted_ns = time.monotonic_ns()
                if self.listed_ns and self.painted_ns:
                    self.full_frame_ns = max(self.listed_ns, self.painted_ns)
                    self.full_frame.set()

    def quit(self) -> None:
        try:
            os.write(self.master, b"q")
            self.proc.wait(15)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.reader.join(5)
        os.close(self.master)


def descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
        except OSError:
            continue
        for child in map(int, children):
            out.append(child)
            todo.append(child)
    return out


def run_dashboard(lab: SshLab, mode: str, panes: int, seconds: float) -> dict[str, float]:
    """``dash-local``: the dashboard on the first host's tmux socket (one server: a dashboard
    watches one local server); ``dash-ssh``: on every host through ssh (``[[hosts]]``)."""
    home = lab.root / f"dash-{mode}"
    home.mkdir(exist_ok=True)
    config = home / "nbs-tui.toml"
    text = 'service = "off"\n\n'  # no background service started by the dashboard
    argv = [sys.executable, "-m", "nbs_tui", "--no-poll", "--config", str(config)]
    if mode == "dash-local":
        first = next(iter(lab.hosts.values()))
        argv += ["-S", first.tmux("display-message", "-p", "#{socket_path}").strip()]
        listed = panes
    else:
        for alias in lab.hosts:
            text += f'[[hosts]]\nname = "{alias}"\nssh = "{alias}"\nssh_options = ["-F", "{lab.config}"]\n\n'
        listed = panes * len(lab.hosts)
    config.write_text(text)
    # as a user's install runs it: bytecode (compile_checkout), not every module compiled at each launch
    hidden = ("TMUX", "TMUX_PANE", "NO_COLOR", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in hidden}
    env.update(
        TERM="xterm-256color", COLORTERM="truecolor", HOME=str(home), XDG_STATE_HOME=str(home / "state"),
        COLUMNS=str(COLS), LINES=str(ROWS),
    )
    env.setdefault("LANG", "C.UTF-8")
    dash = Dashboard(argv, env, listed)
    try:
        if not dash.full_frame.wait(90):
            raise RuntimeError(f"{mode}: no full frame within 90 s (exit {dash.proc.poll()}): {dash.tail[-600:]!r}")
        connect = (dash.full_frame_ns - dash.launched_ns) / 1e9
        listed_s = (dash.listed_ns - dash.launched_ns) / 1e9
        painted_s = (dash.painted_ns - dash.launched_ns) / 1e9
        time.sleep(2.0)  # past the start-up backlog
        app_pids = [dash.proc.pid, *descendants(dash.proc.pid)]
        pids_ssh = sorted(set(ssh_clients(lab)) | {p for p in app_pids if _comm(p) == "ssh"})
        pids_app = [p for p in app_pids if p not in pids_ssh]
        pids_remote = remote_side(lab) if mode == "dash-ssh" else []
        t0_ns = time.time_ns()
        t0 = time.monotonic()
        app0, ssh0, remote0 = cpu_ticks(pids_app), cpu_ticks(pids_ssh), cpu_ticks(pids_remote)
        time.sleep(seconds)
        app1, ssh1, remote1 = cpu_ticks(pids_app), cpu_ticks(pids_ssh), cpu_ticks(pids_remote)
        wall = time.monotonic() - t0
        t1_ns = time.time_ns()
        time.sleep(1.0)  # the window's last markers reach the screen
        if dash.proc.poll() is not None:
            raise RuntimeError(f"{mode}: the dashboard exited ({dash.proc.returncode}): {dash.tail[-600:]!r}")
    finally:
        dash.quit()

    def pct(a: dict[int, int], b: dict[int, int]) -> float:
        return 100.0 * sum(b[p] - a[p] for p in b if p in a) / HZ / wall

    samples = sorted((drawn - sent) / 1e6 for sent, drawn in dash.drawn.items() if t0_ns <= sent <= t1_ns)
    return {
        "connect_s": connect,
        "listed_s": listed_s,
        "painted_s": painted_s,
        "n": len(samples),
        "p50_ms": statistics.median(samples) if samples else float("nan"),
        "p99_ms": samples[int(len(samples) * 0.99)] if samples else float("nan"),
        "max_ms": samples[-1] if samples else float("nan"),
        "cpu_self": pct(app0, app1),
        "cpu_ssh": pct(ssh0, ssh1),
        "cpu_remote": pct(remote0, remote1),
        "ssh_processes": len(pids_ssh),
        "remote_processes": len(pids_remote),
    }


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, nargs="+", default=[1, 3, 5])
    parser.add_argument("--panes", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument(
        "--modes", nargs="+", default=list(MODES), choices=MODES,
        help="which watchers to run, in this order (default: all)",
    )
    parser.add_argument(
        "--repeat", type=int, default=1,
        help="run the modes this many times in turn on each lab (the first full frame moves with the load: "
        "compare medians of runs side by side; with dash-local and dash-ssh, each pair's ratio is printed too)",
    )
    args = parser.parse_args()
    if any(mode.startswith("dash-") for mode in args.modes):
        compile_checkout(REPO)
    script = Path(os.environ.get("TMPDIR", "/tmp")) / f"nbs-bench-remote-writer-{os.getpid()}.py"
    script.write_text(WRITER)
    rows = []
    try:
        for hosts in args.hosts:
            aliases = tuple(f"host{i}" for i in range(hosts))
            with running_lab(aliases) as lab:
                prepare(lab, args.panes, script)
                for mode in [mode for _ in range(args.repeat) for mode in args.modes]:
                    if mode.startswith("dash-"):
                        result = run_dashboard(lab, mode, args.panes, args.seconds)
                    else:
                        result = run_mode(lab, mode, args.seconds)
                    rows.append((hosts, mode, result))
                    print(f"{hosts} host(s) x {args.panes} panes, {mode}: {result}", file=sys.stderr)
    finally:
        script.unlink(missing_ok=True)
    print(f"\n{args.panes} panes per host, a quarter writing 10 lines/s; {args.seconds:.0f} s windows\n")
    print("| hosts | mode | connect+seed | latency p50 / p99 / max (ms) | n | CPU watcher | CPU ssh (procs) | CPU remote side (procs) |")
    print("|---|---|---|---|---|---|---|---|")
    for hosts, mode, r in rows:
        print(
            f"| {hosts} | {mode} | {r['connect_s']:.2f} s | {r['p50_ms']:.1f} / {r['p99_ms']:.1f} / {r['max_ms']:.1f} "
            f"| {r['n']:.0f} | {r['cpu_self']:.1f} % | {r['cpu_ssh']:.1f} % ({r['ssh_processes']:.0f}) "
            f"| {r['cpu_remote']:.1f} % ({r['remote_processes']:.0f}) |"
        )
    if args.repeat > 1:
        print()
        for hosts in args.hosts:
            medians = {
                mode: statistics.median(r["connect_s"] for h, m, r in rows if h == hosts and m == mode)
                for mode in args.modes
            }
            said = ", ".join(f"{mode} {value:.2f} s" for mode, value in medians.items())
            ratio = (
                f"; dash-ssh / dash-local {medians['dash-ssh'] / medians['dash-local']:.2f}x"
                if "dash-ssh" in medians and "dash-local" in medians
                else ""
            )
            print(f"{hosts} host(s), connect+seed, median of {args.repeat}: {said}{ratio}")
            if "dash-ssh" in medians and "dash-local" in medians:
                local = [r["connect_s"] for h, m, r in rows if h == hosts and m == "dash-local"]
                remote = [r["connect_s"] for h, m, r in rows if h == hosts and m == "dash-ssh"]
                pairs = [b / a for a, b in zip(local, remote, strict=True)]  # the runs side by side, in turn
                print(
                    f"{hosts} host(s), dash-ssh / dash-local run by run: {' '.join(f'{p:.2f}x' for p in pairs)} "
                    f"(median {statistics.median(pairs):.2f}x, highest {max(pairs):.2f}x)"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
