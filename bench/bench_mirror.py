"""Benchmark the live mirror against the nbs-claude way, on a private tmux server.

Run on demand (not part of the test suite)::

    .venv/bin/python bench/bench_mirror.py                 # N = 10, 50, 200; 15 s windows
    .venv/bin/python bench/bench_mirror.py --sizes 50 --seconds 10 --no-throughput

For each N it starts a private server (``tmux -L nbs-bench-PID -f /dev/null``) with N panes
of 120x40 in sessions of up to 25 windows; a quarter of them write one coloured ~100-byte line
every ~100 ms, each line carrying ``T<seq>:<time_ns>``; the rest sit idle in ``cat``. Then,
one after another on the same fleet:

* baseline: nobody watches; the tmux server's CPU is measured (for "extra" CPU);
* nbs-tui: a child process runs `TmuxFleet` and records, on every ``screens_changed``, the
  latency from a line's write to the mirror holding it; we read its CPU, peak RSS and its
  time from start to every pane seeded, and the server's extra CPU;
* nbs-claude way: a child process runs one ``tmux capture-pane -p`` subprocess per pane per
  second and records the same latency; we read its CPU (children included) and the server's.

Throughput: one pane runs ``yes | head -n LINES`` while (a) nothing is attached, (b) a plain
``tmux attach`` client runs in a pty (``script``), (c) our fleet is attached; lines/s for each.

CPU is % of one core from /proc/PID/stat. Results: a markdown table on stdout and in
bench/results/mirror-YYYYmmdd-HHMMSS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TICK = os.sysconf("SC_CLK_TCK")
TOKEN = re.compile(r"T(\d+):(\d+)")
WRITER = textwrap.dedent(
    r"""
    import random, sys, time
    random.seed()
    seq = 0
    time.sleep(random.random() * 0.1)
    words = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod".split()
    while True:
        seq += 1
        c = 31 + seq % 7
        text = " ".join(random.choice(words) for _ in range(6))
        sys.stdout.write(
            f"\x1b[{c}m{time.strftime('%H:%M:%S')}\x1b[0m \x1b[1mINFO\x1b[0m {text} "
            f"\x1b[38;5;{seq % 256}mT{seq}:{time.time_ns()}\x1b[0m\n"
        )
        sys.stdout.flush()
        time.sleep(0.08 + random.random() * 0.04)
    """
)


# -- /proc helpers ---------------------------------------------------------------------------


def cpu_ticks(pid: int, children: bool = False) -> int:
    with open(f"/proc/{pid}/stat") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks


def peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


class CpuMeter:
    def __init__(self, pid: int, children: bool = False) -> None:
        self.pid, self.children = pid, children
        self.t0 = time.monotonic()
        self.c0 = cpu_ticks(pid, children)

    def percent(self) -> float:
        wall = time.monotonic() - self.t0
        return 100.0 * (cpu_ticks(self.pid, self.children) - self.c0) / TICK / wall


# -- the fleet under test --------------------------------------------------------------------


class Bench:
    def __init__(self, n: int, workdir: Path) -> None:
        self.n = n
        self.socket = f"nbs-bench-{os.getpid()}-{n}"
        self.workdir = workdir
        self.writer = workdir / "writer.py"
        self.writer.write_text(WRITER)

    def tmux(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True
        ).stdout

    def start(self) -> None:
        busy = max(1, self.n // 4)
        per_session = 25
        made = 0
        session = 0
        while made < self.n:
            name = f"s{session}"
            command = self._command(made, busy)
            args = ["new-session", "-d", "-s", name, "-x", "120", "-y", "40", command]
            if made == 0:
                subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null", *args], check=True)
                self.tmux("set", "-g", "default-size", "120x40")
                self.tmux("set", "-g", "history-limit", "2000")
            else:
                self.tmux(*args)
            made += 1
            for _ in range(per_session - 1):
                if made >= self.n:
                    break
                self.tmux("new-window", "-d", "-t", name, self._command(made, busy))
                made += 1
            session += 1
        self.server_pid = int(self.tmux("display-message", "-p", "#{pid}").strip())

    def _command(self, index: int, busy: int) -> str:
        # spread the busy panes over the sessions
        if index % 4 == 0 and index // 4 < busy:
            return f"{sys.executable} {self.writer}"
        return "cat"

    def stop(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


# -- child processes -------------------------------------------------------------------------


def child_mirror(socket: str) -> None:
    """Run TmuxFleet; report seeding time, then latencies when stdin closes."""
    from nbs_tui.core.model import ServerAddress
    from nbs_tui.tmux.fleet import TmuxFleet

    latencies: list[float] = []
    last_seq: dict[str, int] = {}
    lock = threading.Lock()
    fleet: TmuxFleet

    class Listener:
        def fleet_changed(self, panes: Sequence[object]) -> None:
            pass

        def connection_changed(self, connected: bool, message: str) -> None:
            pass

        def screens_changed(self, pane_ids: frozenset[str]) -> None:
            now = time.time_ns()
            for pane_id in pane_ids:
                screen = fleet.screen(pane_id)
                if screen is None:
                    continue
                with screen.lock:
                    y = screen.cursor_y - 1
                    seen = last_seq.get(pane_id, 0)
                    newest = seen
                    while y >= 0:
                        match = TOKEN.search(screen.row_text(y))
                        if match is None:
                            break
                        seq, stamp = int(match.group(1)), int(match.group(2))
                        if seq <= seen:
                            break
                        newest = max(newest, seq)
                        if seen:  # the first sighting of a pane is its seed, not a latency
                            with lock:
                                latencies.append((now - stamp) / 1e6)
                        y -= 1
                    last_seq[pane_id] = newest

    start = time.monotonic()
    fleet = TmuxFleet(ServerAddress(socket_name=socket), listener=Listener())
    fleet.start()
    ok = fleet.wait_seeded(120)
    seeded = time.monotonic() - start
    print(json.dumps({"seeded_s": seeded, "ok": ok, "panes": len(fleet.panes())}), flush=True)
    with lock:
        latencies.clear()
    sys.stdin.read()
    with lock:
        result = list(latencies)
    stats = fleet.stats()
    fleet.stop()
    print(json.dumps({"latencies": result, "stats": stats}), flush=True)


def child_poller(socket: str) -> None:
    """The nbs-claude way: one capture-pane subprocess per pane per second."""
    panes = subprocess.run(
        ["tmux", "-L", socket, "list-panes", "-a", "-F", "#{pane_id}"],
        capture_output=True, text=True, check=True,
    ).stdout.split()
    latencies: list[float] = []
    last_seq: dict[str, int] = {}
    stop = threading.Event()

    def wait_for_eof() -> None:
        sys.stdin.read()
        stop.set()

    threading.Thread(target=wait_for_eof, daemon=True).start()
    print(json.dumps({"panes": len(panes)}), flush=True)
    t0, w0 = os.times(), time.monotonic()
    sweeps = 0
    while not stop.is_set():
        began = time.monotonic()
        for pane_id in panes:
            text = subprocess.run(
                ["tmux", "-L", socket, "capture-pane", "-p", "-t", pane_id],
                capture_output=True, text=True,
            ).stdout
            now = time.time_ns()
            seen = last_seq.get(pane_id, 0)
            newest = seen
            for match in TOKEN.finditer(text):
                seq, stamp = int(match.group(1)), int(match.group(2))
                if seq > seen:
                    newest = max(newest, seq)
                    if seen:
                        latencies.append((now - stamp) / 1e6)
            last_seq[pane_id] = newest
        sweeps += 1
        stop.wait(max(0.0, 1.0 - (time.monotonic() - began)))
    t1, wall = os.times(), time.monotonic() - w0
    cpu = sum(getattr(t1, k) - getattr(t0, k) for k in ("user", "system", "children_user", "children_system"))
    print(json.dumps({"latencies": latencies, "sweeps": sweeps, "cpu_percent": 100.0 * cpu / wall}), flush=True)


def spawn_child(mode: str, socket: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, __file__, mode, socket],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT,
    )


def finish_child(child: subprocess.Popen[str]) -> dict[str, Any]:
    assert child.stdin is not None and child.stdout is not None
    child.stdin.close()
    line = child.stdout.readline()
    child.wait(30)
    return json.loads(line) if line else {}


# -- measurements ----------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure(n: int, seconds: float, workdir: Path) -> dict[str, float]:
    bench = Bench(n, workdir)
    bench.start()
    row: dict[str, float] = {"n": n, "busy": max(1, n // 4)}
    try:
        time.sleep(2.0)
        base = CpuMeter(bench.server_pid)
        time.sleep(seconds)
        row["server_base"] = base.percent()

        child = spawn_child("--mirror-child", bench.socket)
        assert child.stdout is not None
        first = json.loads(child.stdout.readline())
        row["seeded_s"] = float(first["seeded_s"])
        ours = CpuMeter(child.pid)
        server = CpuMeter(bench.server_pid)
        time.sleep(seconds)
        row["ours_cpu"] = ours.percent()
        row["ours_server_extra"] = server.percent() - row["server_base"]
        row["ours_rss_mb"] = peak_rss_mb(child.pid)
        result = finish_child(child)
        lat = list(result.get("latencies", []))
        row["ours_p50"] = statistics.median(lat) if lat else float("nan")
        row["ours_p99"] = percentile(lat, 0.99)
        row["ours_max"] = max(lat) if lat else float("nan")
        row["ours_samples"] = len(lat)
        row["ours_dropped"] = float(result.get("stats", {}).get("dropped_bytes", 0))

        child = spawn_child("--poller-child", bench.socket)
        assert child.stdout is not None
        child.stdout.readline()
        server = CpuMeter(bench.server_pid)
        time.sleep(seconds)
        row["theirs_server_extra"] = server.percent() - row["server_base"]
        result = finish_child(child)  # its CPU includes its reaped capture-pane subprocesses
        row["theirs_cpu"] = float(result.get("cpu_percent", float("nan")))
        lat = list(result.get("latencies", []))
        row["theirs_p50"] = statistics.median(lat) if lat else float("nan")
        row["theirs_p99"] = percentile(lat, 0.99)
        row["theirs_samples"] = len(lat)
    finally:
        bench.stop()
    return row


def throughput(lines: int, workdir: Path) -> dict[str, float]:
    """lines/s of ``yes | head -n LINES`` in a pane: no client, a plain attach, our fleet."""
    socket = f"nbs-bench-{os.getpid()}-tp"
    out: dict[str, float] = {}
    result = workdir / "tp.txt"

    def tmux(*args: str) -> None:
        subprocess.run(["tmux", "-L", socket, *args], check=True, capture_output=True)

    subprocess.run(["tmux", "-L", socket, "-f", "/dev/null", "new-session", "-d", "-s", "tp",
                    "-x", "120", "-y", "40"], check=True)
    try:
        runner = workdir / "tp.sh"
        runner.write_text(
            f"s=$(date +%s.%N); yes 'the quick brown fox jumps over the lazy dog' | head -n {lines}; "
            f"e=$(date +%s.%N); echo \"$s $e\" > {result}.tmp && mv {result}.tmp {result}\n"
        )

        def run_once() -> float:
            result.unlink(missing_ok=True)
            tmux("send-keys", "-t", "tp", f"clear; sh {runner}", "Enter")
            deadline = time.monotonic() + 300
            while not result.exists():
                if time.monotonic() > deadline:
                    return float("nan")
                time.sleep(0.1)
            s, e = (float(v) for v in result.read_text().split())
            return lines / (e - s)

        out["none"] = run_once()
        script = shutil.which("script")
        if script:
            attach = subprocess.Popen(
                [script, "-q", "-c", f"stty cols 120 rows 41; tmux -L {socket} attach -t tp", "/dev/null"],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )
            time.sleep(1.0)
            out["attach"] = run_once()
            attach.terminate()
            attach.wait(10)
            subprocess.run(["tmux", "-L", socket, "detach-client", "-a"], capture_output=True)
        child = spawn_child("--mirror-child", socket)
        assert child.stdout is not None
        child.stdout.readline()
        out["fleet"] = run_once()
        stats = finish_child(child).get("stats", {})
        out["fleet_dropped_mb"] = float(stats.get("dropped_bytes", 0)) / 1e6
        out["fleet_reseeds"] = float(stats.get("reseeds", 0))
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)
    return out


def table(rows: list[dict[str, float]]) -> str:
    head = (
        "| N (busy) | seeded in | nbs-tui p50 / p99 / max ms | nbs-tui CPU | tmux extra (nbs-tui) "
        "| nbs-tui peak RSS | nbs-claude p50 / p99 ms | nbs-claude CPU | tmux extra (nbs-claude) "
        "| ours+server vs theirs+server |\n|---|---|---|---|---|---|---|---|---|---|\n"
    )
    body = ""
    for r in rows:
        ours = r["ours_cpu"] + r["ours_server_extra"]
        theirs = r["theirs_cpu"] + r["theirs_server_extra"]
        body += (
            f"| {int(r['n'])} ({int(r['busy'])}) | {r['seeded_s']:.2f} s "
            f"| {r['ours_p50']:.1f} / {r['ours_p99']:.1f} / {r['ours_max']:.0f} "
            f"| {r['ours_cpu']:.1f} % | {r['ours_server_extra']:.1f} % | {r['ours_rss_mb']:.0f} MB "
            f"| {r['theirs_p50']:.0f} / {r['theirs_p99']:.0f} | {r['theirs_cpu']:.1f} % "
            f"| {r['theirs_server_extra']:.1f} % | {ours:.1f} % vs {theirs:.1f} % ({ours / theirs:.2f}x) |\n"
        )
    return head + body


def main(argv: Sequence[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args[0] == "--mirror-child":
        child_mirror(args[1])
        return 0
    if args and args[0] == "--poller-child":
        child_poller(args[1])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 50, 200])
    parser.add_argument("--seconds", type=float, default=15.0, help="length of each measuring window")
    parser.add_argument("--lines", type=int, default=2_000_000, help="lines for the throughput test")
    parser.add_argument("--no-throughput", action="store_true")
    opts = parser.parse_args(args)
    workdir = Path(f"/tmp/nbs-bench-{os.getpid()}")
    workdir.mkdir(exist_ok=True)
    rows = []
    for n in opts.sizes:
        print(f"measuring N={n} ...", file=sys.stderr, flush=True)
        rows.append(measure(n, opts.seconds, workdir))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    report = f"## Live mirror vs the nbs-claude way ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})\n\n"
    report += f"{os.cpu_count()} cores; windows of {opts.seconds:.0f} s; CPU in % of one core.\n\n"
    report += table(rows)
    if not opts.no_throughput:
        print("measuring throughput ...", file=sys.stderr, flush=True)
        tp = throughput(opts.lines, workdir)
        report += (
            f"\n`yes | head -n {opts.lines}` in a pane, lines/s: no client {tp.get('none', 0):,.0f}; "
            f"plain `tmux attach` in a pty {tp.get('attach', float('nan')):,.0f}; "
            f"nbs-tui fleet attached {tp.get('fleet', 0):,.0f} "
            f"(dropped {tp.get('fleet_dropped_mb', 0):.1f} MB in nbs-tui, {tp.get('fleet_reseeds', 0):.0f} re-seeds)\n"
        )
    print(report)
    results = ROOT / "bench" / "results"
    results.mkdir(parents=True, exist_ok=True)
    path = results / f"mirror-{time.strftime('%Y%m%d-%H%M%S')}.md"
    path.write_text(report)
    print(f"saved {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
