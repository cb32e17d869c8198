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
import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
if "--code" in sys.argv:  # a child measuring another checkout's code imports it from there
    sys.path.insert(0, sys.argv[sys.argv.index("--code") + 1])

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
    """N plain panes of 120x40 on a private server, in sessions of up to ``per_session`` windows:
    ``busy`` of them (default a quarter, one in four) run the writer, the rest ``idle`` (default
    ``cat``; "" for the server's default shell, an idle shell)."""

    def __init__(
        self, n: int, workdir: Path, busy: int | None = None, idle: str = "cat", per_session: int = 25
    ) -> None:
        self.n = n
        self.per_session = per_session
        self.busy = max(1, n // 4) if busy is None else busy
        self.idle = idle
        self.socket = f"nbs-bench-{os.getpid()}-{n}"
        self.workdir = workdir
        self.writer = workdir / "writer.py"
        self.writer.write_text(WRITER)

    def tmux(self, *args: str) -> str:
        return subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, check=True
        ).stdout

    def start(self) -> None:
        busy = self.busy
        per_session = self.per_session
        made = 0
        session = 0
        while made < self.n:
            name = f"s{session}"
            command = self._command(made, busy)
            args = ["new-session", "-d", "-s", name, "-x", "120", "-y", "40", *command]
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
                self.tmux("new-window", "-d", "-t", name, *self._command(made, busy))
                made += 1
            session += 1
        self.server_pid = int(self.tmux("display-message", "-p", "#{pid}").strip())

    def _command(self, index: int, busy: int) -> list[str]:
        # spread the busy panes over the sessions
        if index % 4 == 0 and index // 4 < busy:
            return [f"{sys.executable} {self.writer}"]
        return [self.idle] if self.idle else []

    def stop(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True)


# -- child processes -------------------------------------------------------------------------


def child_mirror(socket: str, service: bool = False, stream: bool = True) -> None:
    """Run TmuxFleet; report seeding time, then latencies when stdin closes.

    Two latencies per line: "model", when `PaneScreen.feed` has applied the bytes holding the
    token (the mirror holds it), and "notified", when ``screens_changed`` reported the pane
    (what the app sees; includes the ~60 Hz coalescing).

    ``service``: the fleet as the service and the dashboard run it (``watch_all=False``): one
    busy pane watched (a dashboard's mirror), and once a second, as a sidecar does, every pane
    read with ``captured`` (an in-band capture only of the panes that printed); "captured"
    latencies are a line's write to the capture that holds it. ``stream=False`` (with
    ``service``): the headless service's fleet, ``stream_output=False``: no pane watched, tmux
    sends no output at all.
    """
    from nbs_tui.core.fleet.model import ServerAddress
    from nbs_tui.core.screen.pane_screen import PaneScreen
    from nbs_tui.tmux.fleet import TmuxFleet
    from nbs_tui.tmux.port import FleetListener

    notified: list[float] = []
    captured: list[float] = []
    model: list[tuple[float, float]] = []
    last_seq: dict[str, int] = {}
    lock = threading.Lock()
    fleet: TmuxFleet
    token_bytes = re.compile(rb"T(\d+):(\d{19})")
    original_feed = PaneScreen.feed

    def feed(self: PaneScreen, data: bytes) -> None:
        original_feed(self, data)
        if b"T" in data:
            now = time.time_ns()
            for match in token_bytes.finditer(data):
                model.append((now / 1e9, (now - int(match.group(2))) / 1e6))

    PaneScreen.feed = feed  # type: ignore[method-assign]

    class Listener(FleetListener):
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
                                notified.append((now - stamp) / 1e6)
                        y -= 1
                    last_seq[pane_id] = newest

    start = time.monotonic()
    if service:
        fleet = TmuxFleet(
            ServerAddress(socket_name=socket), listener=Listener(), watch_all=False, stream_output=stream
        )
    else:
        fleet = TmuxFleet(ServerAddress(socket_name=socket), listener=Listener())
    fleet.start()
    ok = fleet.wait_seeded(120)
    sampler_stop = threading.Event()
    if service:
        panes = [p.pane_id for p in fleet.panes()]
        if stream:
            fleet.set_watched("mirror", panes[:1])  # pane 0 is a busy writer
            ok = ok and retry(lambda: fleet.seeded(panes[0]), 30)
        seen_caps: dict[str, object] = {}

        def sample() -> None:
            """The sidecar's reads: every pane once a second."""
            next_at = time.monotonic()
            while not sampler_stop.is_set():
                for pane_id in panes:
                    cap = fleet.captured(pane_id)
                    if cap is None or seen_caps.get(pane_id) is cap:
                        continue
                    seen_caps[pane_id] = cap
                    now = time.time_ns()
                    seen = last_seq.get("cap" + pane_id, 0)
                    newest = seen
                    for match in TOKEN.finditer("\n".join(cap.lines)):
                        seq, stamp = int(match.group(1)), int(match.group(2))
                        if seq > seen:
                            newest = max(newest, seq)
                            if seen:
                                with lock:
                                    captured.append((now - stamp) / 1e6)
                    last_seq["cap" + pane_id] = newest
                next_at += 1.0
                sampler_stop.wait(max(0.0, next_at - time.monotonic()))

        threading.Thread(target=sample, daemon=True).start()
    seeded = time.monotonic() - start
    # The first second after seeding carries the start-up backlog: reported on its own.
    with lock:
        model.clear()
    time.sleep(1.0)
    with lock:
        startup = [lat for _t, lat in model]
        notified.clear()
        captured.clear()
        model.clear()
    window_start = time.time()
    print(json.dumps({"seeded_s": seeded, "ok": ok, "panes": len(fleet.panes())}), flush=True)
    sys.stdin.read()
    with lock:
        result = list(notified)
        fed = list(model)
        caps = list(captured)
    stats = fleet.stats()
    sampler_stop.set()
    fleet.stop()
    worst = sorted(fed, key=lambda x: -x[1])[:10]
    print(json.dumps({
        "latencies": result,
        "model": [lat for _t, lat in fed],
        "worst_model": [(round(t - window_start, 2), round(lat, 1)) for t, lat in worst],
        "startup_max": max(startup, default=float("nan")),
        "stats": stats,
        "captured": caps,
    }), flush=True)


def retry(condition: Any, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


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


SIDECAR_SCRIPT = Path(__file__).with_name("nbs_claude_sidecar.sh")
SIDECARS_WARMUP = 3.0
"""Seconds the sidecars run before their window starts (bash's start-up is not their loop)."""


def child_sidecars(socket: str) -> None:
    """The nbs-claude way as it runs: one bash sidecar loop per pane (nbs_claude_sidecar.sh).

    Prints ``{"panes": N}`` once they have run SIDECARS_WARMUP seconds; at EOF on stdin, the
    CPU they and the processes they ran and waited for took since then (``/proc/PID/stat``
    with the children's fields, read before they are stopped)."""
    listing = subprocess.run(
        ["tmux", "-L", socket, "list-panes", "-a", "-F", "#{pane_id} #{pane_current_path}"],
        capture_output=True, text=True, check=True,
    ).stdout
    panes = [line.split(" ", 1) for line in listing.splitlines() if " " in line]
    registries = Path(tempfile.mkdtemp(prefix="nbs-claude-registries-"))
    sidecars = [
        subprocess.Popen(  # each in a process group of its own: stopped with what it runs
            ["bash", str(SIDECAR_SCRIPT), socket, pane_id, project],
            stdin=subprocess.DEVNULL, start_new_session=True,
            env={**os.environ, "NBS_CLAUDE_REGISTRY": str(registries / f"{index}.registry")},
        )
        for index, (pane_id, project) in enumerate(panes)
    ]

    def ticks() -> int:  # a sidecar that ended is a zombie until waited for: still readable
        return sum(cpu_ticks(sidecar.pid, children=True) for sidecar in sidecars)

    time.sleep(SIDECARS_WARMUP)
    c0, w0 = ticks(), time.monotonic()
    print(json.dumps({"panes": len(sidecars)}), flush=True)
    sys.stdin.read()
    c1, wall = ticks(), time.monotonic() - w0
    for sidecar in sidecars:  # SIGKILL: on a saturated machine a trapped TERM waits for its sleep
        with contextlib.suppress(ProcessLookupError):
            os.killpg(sidecar.pid, signal.SIGKILL)
    for sidecar in sidecars:
        sidecar.wait()
    shutil.rmtree(registries, ignore_errors=True)
    print(json.dumps({"cpu_percent": 100.0 * (c1 - c0) / TICK / wall, "sidecars": len(sidecars)}), flush=True)


def measure_nbs_claude(
    mode: str, socket: str, server_pid: int, server_base: float, seconds: float
) -> tuple[dict[str, Any], float]:
    """One nbs-claude way (``--poller-child`` or ``--sidecars-child``) on a fleet for a window:
    what the child reported (its CPU with the processes it ran, ``cpu_percent``) and the
    server's extra CPU over ``server_base``."""
    child = spawn_child(mode, socket)
    assert child.stdout is not None
    child.stdout.readline()
    server = CpuMeter(server_pid)
    time.sleep(seconds)
    extra = server.percent() - server_base
    return finish_child(child), extra


def spawn_child(mode: str, socket: str, code: Path | None = None) -> subprocess.Popen[str]:
    """The child process; ``code``: import nbs_tui from that checkout instead of this one."""
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = str(code)
    return subprocess.Popen(
        [sys.executable, __file__, mode, socket] + (["--code", str(code)] if code else []),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=code or ROOT, env=env,
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


def measure_way(
    row: dict[str, float], name: str, mode: str, bench: Bench, seconds: float, code: Path | None = None
) -> dict[str, Any]:
    """One child (``mode``) on the fleet for a window: its CPU, the server's extra, its RSS."""
    child = spawn_child(mode, bench.socket, code)
    assert child.stdout is not None
    first = json.loads(child.stdout.readline())
    row[f"{name}_seeded_s"] = float(first["seeded_s"])
    ours = CpuMeter(child.pid)
    server = CpuMeter(bench.server_pid)
    time.sleep(seconds)
    row[f"{name}_cpu"] = ours.percent()
    row[f"{name}_server_extra"] = server.percent() - row["server_base"]
    row[f"{name}_rss_mb"] = peak_rss_mb(child.pid)
    result = finish_child(child)
    stats = result.get("stats", {})
    row[f"{name}_fed_mb"] = float(stats.get("fed_bytes", float("nan"))) / 1e6
    row[f"{name}_captures"] = float(stats.get("captures", float("nan")))
    for kind in ("latencies", "captured"):
        lat = list(result.get(kind, []))
        row[f"{name}_{kind}_p50"] = statistics.median(lat) if lat else float("nan")
        row[f"{name}_{kind}_p99"] = percentile(lat, 0.99)
    return result


def measure(n: int, seconds: float, workdir: Path, before: Path | None = None) -> dict[str, float]:
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
        fed = list(result.get("model", []))
        row["model_p50"] = statistics.median(fed) if fed else float("nan")
        row["model_p99"] = percentile(fed, 0.99)
        row["model_max"] = max(fed) if fed else float("nan")
        row["startup_max"] = float(result.get("startup_max", float("nan")))
        print(f"N={n} worst model latencies (s into window, ms): {result.get('worst_model')}", file=sys.stderr)
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

        # Parse only what someone looks at: the service's fleet, and the old fleet for comparison.
        measure_way(row, "service", "--service-child", bench, seconds)
        measure_way(row, "nooutput", "--nooutput-child", bench, seconds)
        if before is not None:
            measure_way(row, "before", "--mirror-child", bench, seconds, before)
    finally:
        bench.stop()
    return row


PACED = textwrap.dedent(
    r"""
    import sys, time
    rate, seconds, result = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
    line = b"\x1b[32mpaced\x1b[0m " + b"z" * 70 + b"\n"
    block = line * 64
    out = sys.stdout.buffer
    sent = 0
    start = time.monotonic()
    while (now := time.monotonic()) - start < seconds:
        due = rate * (now - start)
        while sent < due:
            out.write(block)
            sent += len(block)
        out.flush()
        time.sleep(0.005)
    open(result + ".tmp", "w").write(str(sent / (time.monotonic() - start)))
    import os; os.replace(result + ".tmp", result)
    """
)


def throughput(lines: int, workdir: Path, rounds: int = 3, paced_rate: float = 2e6) -> dict[str, Any]:
    """A pane writing as fast as it can (``yes | head -n LINES``, lines/s) and one writing at
    ``paced_rate`` bytes/s (achieved B/s), with: no client, a plain ``tmux attach`` in a pty,
    a bare control client draining to /dev/null (tmux's own ceiling), and our fleet.
    Interleaved, ``rounds`` times each; medians."""
    socket = f"nbs-bench-{os.getpid()}-tp"
    out: dict[str, Any] = {}
    result = workdir / "tp.txt"
    paced = workdir / "paced.py"
    paced.write_text(PACED)

    def tmux(*args: str) -> None:
        done = subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args)}: {done.stderr.strip()}")

    def ensure_server() -> None:
        # Another process on this shared machine has twice taken this server away between
        # runs; start it again rather than lose the whole measurement.
        if subprocess.run(["tmux", "-L", socket, "has-session", "-t", "tp"], capture_output=True).returncode:
            print("starting the throughput server", file=sys.stderr)
            subprocess.run(["tmux", "-L", socket, "-f", "/dev/null", "new-session", "-d", "-s", "tp",
                            "-x", "120", "-y", "40", "bash --norc --noprofile"], check=True)
            time.sleep(0.3)

    ensure_server()
    try:
        runner = workdir / "tp.sh"
        runner.write_text(
            f"s=$(date +%s.%N); yes 'the quick brown fox jumps over the lazy dog' | head -n {lines}; "
            f"e=$(date +%s.%N); echo \"$s $e\" > {result}.tmp && mv {result}.tmp {result}\n"
        )

        def wait_result() -> str:
            deadline = time.monotonic() + 300
            while not result.exists():
                if time.monotonic() > deadline:
                    return ""
                time.sleep(0.05)
            return result.read_text()

        def flood() -> float:
            ensure_server()
            result.unlink(missing_ok=True)
            tmux("send-keys", "-t", "tp", f"clear; sh {runner}", "Enter")
            text = wait_result()
            if not text:
                return float("nan")
            s, e = (float(v) for v in text.split())
            return lines / (e - s)

        def steady() -> float:
            result.unlink(missing_ok=True)
            tmux("send-keys", "-t", "tp", f"clear; {sys.executable} {paced} {paced_rate} 4 {result}", "Enter")
            text = wait_result()
            return float(text) if text else float("nan")

        script = shutil.which("script")
        variants = ["none", "attach", "control", "fleet"] if script else ["none", "control", "fleet"]
        runs: dict[str, list[float]] = {v: [] for v in variants}
        steadies: dict[str, list[float]] = {v: [] for v in variants}
        dropped = reseeds = 0.0
        for _round in range(rounds):
            for variant in variants:
                helper: subprocess.Popen[Any] | None = None
                if variant == "attach":
                    helper = subprocess.Popen(
                        [str(script), "-q", "-c", f"stty cols 120 rows 41; tmux -L {socket} attach -t tp", "/dev/null"],
                        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    )
                    time.sleep(1.0)
                elif variant == "control":
                    helper = subprocess.Popen(
                        ["tmux", "-L", socket, "-C", "attach", "-f", "ignore-size", "-t", "tp"],
                        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    )
                    time.sleep(0.5)
                elif variant == "fleet":
                    helper = spawn_child("--mirror-child", socket)
                    assert helper.stdout is not None
                    helper.stdout.readline()
                runs[variant].append(flood())
                steadies[variant].append(steady())
                if variant == "fleet" and helper is not None:
                    stats = finish_child(helper).get("stats", {})
                    dropped += float(stats.get("dropped_bytes", 0)) / 1e6
                    reseeds += float(stats.get("reseeds", 0))
                elif helper is not None:
                    if helper.stdin is not None:
                        helper.stdin.close()
                    helper.terminate()
                    helper.wait(10)
                    time.sleep(0.5)
        for name in variants:
            out[name] = statistics.median(runs[name])
            out[name + "_all"] = runs[name]
            out[name + "_paced"] = statistics.median(steadies[name])
        out["fleet_dropped_mb"] = dropped / rounds
        out["fleet_reseeds"] = reseeds / rounds
        out["paced_rate"] = paced_rate
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True)
    return out


def _fmt(values: object) -> str:
    return "/".join(f"{v / 1000:.0f}k" for v in values) if isinstance(values, list) else "-"


def table(rows: list[dict[str, float]]) -> str:
    head = (
        "| N (busy) | all seeded in (worst latency in the next 1 s) | mirror holds it: p50 / p99 / max ms | app notified: p50 / p99 / max ms | nbs-tui CPU | tmux extra (nbs-tui) "
        "| nbs-tui peak RSS | nbs-claude p50 / p99 ms | nbs-claude CPU | tmux extra (nbs-claude) "
        "| ours+server vs theirs+server |\n|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    body = ""
    for r in rows:
        ours = r["ours_cpu"] + r["ours_server_extra"]
        theirs = r["theirs_cpu"] + r["theirs_server_extra"]
        body += (
            f"| {int(r['n'])} ({int(r['busy'])}) | {r['seeded_s']:.2f} s ({r['startup_max']:.0f} ms) "
            f"| {r['model_p50']:.1f} / {r['model_p99']:.1f} / {r['model_max']:.0f} "
            f"| {r['ours_p50']:.1f} / {r['ours_p99']:.1f} / {r['ours_max']:.0f} "
            f"| {r['ours_cpu']:.1f} % | {r['ours_server_extra']:.1f} % | {r['ours_rss_mb']:.0f} MB "
            f"| {r['theirs_p50']:.0f} / {r['theirs_p99']:.0f} | {r['theirs_cpu']:.1f} % "
            f"| {r['theirs_server_extra']:.1f} % | {ours:.1f} % vs {theirs:.1f} % ({ours / theirs:.2f}x) |\n"
        )
    return head + body


def ways_table(rows: list[dict[str, float]], before: Path | None) -> str:
    """Every way measured on the same fleet in the same run, against the nbs-claude way."""
    head = (
        "| N (busy) | way | its CPU | tmux extra | total | vs nbs-claude | parsed by pyte (MB, whole run) "
        "| latency p50 / p99 ms |\n|---|---|---|---|---|---|---|---|\n"
    )
    body = ""
    for r in rows:
        theirs = r["theirs_cpu"] + r["theirs_server_extra"]
        ways = []
        if before is not None:
            ways.append(("before", f"every pane parsed ({before.name}, the code before)", "latencies"))
        ways.append(("ours", "every pane parsed (watch_all, this code)", ""))
        ways.append(("service", "one pane watched + `captured` of every pane 1/s", "captured"))
        ways.append(("nooutput", "no output streamed (headless, service) + `captured` of every pane 1/s", "captured"))
        for key, label, lat in ways:
            total = r[f"{key}_cpu"] + r[f"{key}_server_extra"]
            if key == "ours":
                latency = f"{r['ours_p50']:.1f} / {r['ours_p99']:.1f}"
                parsed = "all"
            else:
                latency = f"{r[f'{key}_{lat}_p50']:.0f} / {r[f'{key}_{lat}_p99']:.0f}"
                parsed = f"{r[f'{key}_fed_mb']:.2f}" if r[f"{key}_fed_mb"] == r[f"{key}_fed_mb"] else "all"
                if key == "nooutput":
                    latency += f" (captures, {r['nooutput_captures']:.0f} taken)"
                if key == "service":
                    latency = (
                        f"{latency} (captures, {r['service_captures']:.0f} taken); watched pane "
                        f"{r['service_latencies_p50']:.1f} / {r['service_latencies_p99']:.1f}"
                    )
            body += (
                f"| {int(r['n'])} ({int(r['busy'])}) | {label} | {r[f'{key}_cpu']:.1f} % "
                f"| {r[f'{key}_server_extra']:.1f} % | {total:.1f} % | {total / theirs:.2f}x | {parsed} | {latency} |\n"
            )
        body += (
            f"| {int(r['n'])} ({int(r['busy'])}) | nbs-claude way (capture-pane subprocess per pane per s) "
            f"| {r['theirs_cpu']:.1f} % | {r['theirs_server_extra']:.1f} % | {theirs:.1f} % | 1.00x | - "
            f"| {r['theirs_p50']:.0f} / {r['theirs_p99']:.0f} |\n"
        )
    return head + body


def main(argv: Sequence[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args[0] == "--mirror-child":
        child_mirror(args[1])
        return 0
    if args and args[0] == "--service-child":
        child_mirror(args[1], service=True)
        return 0
    if args and args[0] == "--nooutput-child":
        child_mirror(args[1], service=True, stream=False)
        return 0
    if args and args[0] == "--poller-child":
        child_poller(args[1])
        return 0
    if args and args[0] == "--sidecars-child":
        child_sidecars(args[1])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10, 50, 200])
    parser.add_argument("--seconds", type=float, default=15.0, help="length of each measuring window")
    parser.add_argument("--lines", type=int, default=2_000_000, help="lines for the throughput test")
    parser.add_argument("--no-throughput", action="store_true")
    parser.add_argument("--paced-rate", type=float, default=2e6, help="bytes/s of the paced writer (default 2e6)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the throughput test")
    parser.add_argument(
        "--before", type=Path, default=None,
        help="a checkout of older code (e.g. a worktree at an earlier commit): its fleet is measured too",
    )
    opts = parser.parse_args(args)
    workdir = Path(f"/tmp/nbs-bench-{os.getpid()}")
    workdir.mkdir(exist_ok=True)
    rows = []
    load_before = f"{os.getloadavg()[0]:.1f}"
    for n in opts.sizes:
        print(f"measuring N={n} ...", file=sys.stderr, flush=True)
        rows.append(measure(n, opts.seconds, workdir, opts.before))
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    report = f"## Live mirror vs the nbs-claude way ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})\n\n"
    report += (
        f"{os.cpu_count()} cores; windows of {opts.seconds:.0f} s; CPU in % of one core; "
        f"load average before/after {load_before} / {os.getloadavg()[0]:.1f}.\n\n"
    )
    if rows:
        report += table(rows)
        report += "\n" + ways_table(rows, opts.before)
    if not opts.no_throughput:
        print("measuring throughput ...", file=sys.stderr, flush=True)
        tp = throughput(opts.lines, workdir, rounds=opts.rounds, paced_rate=opts.paced_rate)
        report += (
            f"\n| pane writer ({opts.rounds} interleaved rounds) | no client | plain `tmux attach` (pty) | bare `tmux -C` to /dev/null | nbs-tui fleet |\n"
            "|---|---|---|---|---|\n"
            f"| `yes \\| head -n {opts.lines}`, lines/s (median) | {tp.get('none', 0):,.0f} "
            f"| {tp.get('attach', float('nan')):,.0f} | {tp.get('control', 0):,.0f} | {tp.get('fleet', 0):,.0f} |\n"
            f"| same, each run | {_fmt(tp.get('none_all'))} | {_fmt(tp.get('attach_all'))} "
            f"| {_fmt(tp.get('control_all'))} | {_fmt(tp.get('fleet_all'))} |\n"
            f"| paced at {tp['paced_rate'] / 1e6:.0f} MB/s, achieved MB/s | {tp.get('none_paced', 0) / 1e6:.2f} "
            f"| {tp.get('attach_paced', float('nan')) / 1e6:.2f} | {tp.get('control_paced', 0) / 1e6:.2f} "
            f"| {tp.get('fleet_paced', 0) / 1e6:.2f} |\n"
            f"\nDuring the floods nbs-tui dropped {tp.get('fleet_dropped_mb', 0):.1f} MB per run in its own "
            f"buffers and re-seeded {tp.get('fleet_reseeds', 0):.0f} times.\n"
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
