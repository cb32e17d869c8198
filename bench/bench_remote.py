"""Hosts through ssh against the same panes watched locally (issue 12, docs/remote.md).

For H in --hosts (default 1 3 5) it starts H "hosts": each a private sshd on loopback with its own
tmux server (the ssh lab of tests/remote), each with --panes panes (default 20) in one session, a
quarter of them writing one ~100-byte line every 100 ms that carries ``T<seq>:<time_ns>``, the
rest idle in ``cat``. Then, on the same panes:

1. **local**: one `TmuxFleet` per host on its tmux socket, in this process;
2. **ssh**: one `TmuxFleet` per host with an `SshTmuxRunner` (a new connection each).

Reported per mode: time from ``start()`` to every host's panes seeded, write-to-model latency
(``screens_changed`` -> the line is in the `PaneScreen`; first sighting of a pane is its seed and
not counted) median / p99 / max, and CPU (% of one core over the window, from /proc): this process,
the local ssh clients, and the remote side (the sshd sessions and the tmux control clients they
run). The tmux servers' own CPU is the same work in both modes and is left out.

    .venv/bin/python bench/bench_remote.py                 # 1, 3, 5 hosts x 20 panes, 10 s windows
    .venv/bin/python bench/bench_remote.py --hosts 1 --seconds 5
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from nbs_tui.core.model import PaneId, PaneInfo, ServerAddress  # noqa: E402
from nbs_tui.tmux.fleet import TmuxFleet  # noqa: E402
from nbs_tui.tmux.runner import TmuxRunner  # noqa: E402
from nbs_tui.tmux.ssh import SshHost, SshTmuxRunner  # noqa: E402
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
HZ = os.sysconf("SC_CLK_TCK")


class Latency:
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
            if screen is None:
                continue
            last = self.seen.get(pane_id)
            top = last or 0
            for row in screen.text_lines():
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
        out[pid] = int(fields[11]) + int(fields[12])
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


def run_mode(lab: SshLab, mode: str, seconds: float) -> dict[str, float]:
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
    return {
        "connect_s": connect,
        "n": len(samples),
        "p50_ms": statistics.median(samples) if samples else float("nan"),
        "p99_ms": samples[int(len(samples) * 0.99)] if samples else float("nan"),
        "max_ms": samples[-1] if samples else float("nan"),
        "cpu_self": 100.0 * ((own1.user - own0.user) + (own1.system - own0.system)) / wall,
        "cpu_ssh": pct(ssh0, ssh1),
        "cpu_remote": pct(remote0, remote1),
        "ssh_processes": len(pids_ssh),
        "remote_processes": len(pids_remote),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, nargs="+", default=[1, 3, 5])
    parser.add_argument("--panes", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()
    script = Path(os.environ.get("TMPDIR", "/tmp")) / f"nbs-bench-remote-writer-{os.getpid()}.py"
    script.write_text(WRITER)
    rows = []
    try:
        for hosts in args.hosts:
            aliases = tuple(f"host{i}" for i in range(hosts))
            with running_lab(aliases) as lab:
                prepare(lab, args.panes, script)
                for mode in ("local", "ssh"):
                    result = run_mode(lab, mode, args.seconds)
                    rows.append((hosts, mode, result))
                    print(f"{hosts} host(s) x {args.panes} panes, {mode}: {result}", file=sys.stderr)
    finally:
        script.unlink(missing_ok=True)
    print(f"\n{args.panes} panes per host, a quarter writing 10 lines/s; {args.seconds:.0f} s windows\n")
    print("| hosts | mode | connect+seed | latency p50 / p99 / max (ms) | n | CPU nbs-tui | CPU ssh (procs) | CPU remote side (procs) |")
    print("|---|---|---|---|---|---|---|---|")
    for hosts, mode, r in rows:
        print(
            f"| {hosts} | {mode} | {r['connect_s']:.2f} s | {r['p50_ms']:.1f} / {r['p99_ms']:.1f} / {r['max_ms']:.1f} "
            f"| {r['n']:.0f} | {r['cpu_self']:.1f} % | {r['cpu_ssh']:.1f} % ({r['ssh_processes']:.0f}) "
            f"| {r['cpu_remote']:.1f} % ({r['remote_processes']:.0f}) |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
