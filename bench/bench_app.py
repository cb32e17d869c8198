"""Benchmark the dashboard itself: the real CLI in a pty, against the nbs-claude way.

Run on demand (not part of the test suite)::

    .venv/bin/python bench/bench_app.py                         # N = 10, 50, 200; 15 s windows
    .venv/bin/python bench/bench_app.py --sizes 50 --seconds 10 --launches 3
    .venv/bin/python bench/bench_app.py --sizes 200 --profile   # + a py-spy run of the app

For each N it starts ``DemoFleet.start_busy(N, busy_fraction=0.25, marker_dir=...)`` on a
private server (imitation Claude Code agents, four 80x24 panes tiled per 160x48 window; a
quarter of them print 10 coloured lines a second: the first quarter, so whole windows and
sessions are busy and the rest quiet; with ``--spread`` one pane in four, so every window and
session holds a busy agent). Agent ``bench-0`` (busy, the first pane of
the first session, so the pane the dashboard selects at launch) also gets a marker line
``T<seq>:<time_ns>`` through its marker FIFO every 80-120 ms for the whole run; the agent logs
the CLOCK_MONOTONIC time right after the marker's bytes went to its pty. Then, one after
another on the same fleet:

* baseline: nothing attached; the tmux server's CPU is the reference for "extra" CPU;
* nbs-tui: the CLI (``python -m nbs_tui -L <socket> --no-poll``, i.e. `create_app`'s app, what
  ``nbs-tui`` runs) in a pty of its own sized 160x48 (TERM=xterm-256color, HOME a temp dir).
  A reader thread drains the pty master continuously, timestamps every read and looks for
  marker tokens in the raw bytes: a marker's latency is from the agent's pty write to the
  first read of the app's terminal output that contains the whole token (the bytes a
  terminal would draw; the terminal's own parsing is not included). Until the first full
  frame the bytes are also fed to a pyte screen: the first full frame is the first moment
  the status bar says ``N panes`` and a marker is drawn in the mirror (right half). After
  that, once the server's sidecar service (which the app starts) runs, and a 2 s settle: a
  ``--seconds`` window for CPU (the app process, reaped children included; its ``tmux -C``
  clients; the service) and the server's extra CPU; peak RSS is the app's VmHWM. ``q`` quits
  it, and the service is stopped before the next way is measured.
* nbs-claude way, captures only: bench_mirror's poller child (one ``tmux capture-pane -p``
  subprocess per pane per second; its CPU includes the subprocesses): a lower bound of what
  nbs-claude costs; its latency is from the bench writing the marker into the FIFO to the
  capture that holds it.
* nbs-claude way, its sidecars: one bash loop per pane (``bench/nbs_claude_sidecar.sh``, the
  same processes each second as the seeds' sidecar: list-panes, capture-pane, md5sum, greps),
  their CPU with the processes they ran, and the server's extra.

With ``--plain`` the fleet is bench_mirror's instead: N plain 120x40 panes, a quarter running a
writer that prints a coloured line every 80-120 ms stamped ``T<seq>:<time_ns>`` with the wall
clock, the rest ``cat``; the first pane (a writer) is the one mirrored, and a line's latency is
from its stamp to the first read of the app's output holding it.

CPU is % of one core from /proc/PID/stat. Results: a markdown table on stdout and in
bench/results/app-YYYYmmdd-HHMMSS.md (gitignored).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import fcntl
import json
import os
import random
import re
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

from bench_mirror import (  # noqa: E402
    TICK,
    Bench,
    CpuMeter,
    cpu_ticks,
    measure_nbs_claude,
    peak_rss_mb,
    percentile,
)

from nbs_tui.demo.launcher import DemoFleet  # noqa: E402

COLS, ROWS = 160, 48
PLAIN_SIZE = (200, 60)
"""The terminal of a ``--plain`` run (as issue 13's plain-pane figures were taken): the mirror
then shows the writers' lines (up to ~95 columns) whole, stamps included."""
TOKEN = re.compile(rb"T(\d+):(\d{19})")
TOKEN_TEXT = re.compile(r"T(\d+):(\d{19})")
MARKED = "bench-0"
SETTLE = 2.0


# -- the marker pane -----------------------------------------------------------------------------


class Markers:
    """Writes ``T<seq>:<time_ns>`` into an agent's marker FIFO every 80-120 ms."""

    def __init__(self, fifo: Path, log: Path) -> None:
        self.fifo, self.log = fifo, log
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, name="markers", daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join(5)

    def _run(self) -> None:
        fd = os.open(self.fifo, os.O_WRONLY)  # the agent holds the FIFO open: never blocks
        try:
            seq = 0
            while not self.stop_event.wait(0.08 + random.random() * 0.04):
                seq += 1
                os.write(fd, f"T{seq}:{time.time_ns()}\n".encode())
        finally:
            os.close(fd)

    def written(self) -> dict[int, int]:
        """seq -> CLOCK_MONOTONIC ns right after the agent wrote the marker to its pty."""
        out: dict[int, int] = {}
        if not self.log.exists():
            return out
        for line in self.log.read_text().splitlines():
            parts = line.split("\t")
            match = TOKEN_TEXT.fullmatch(parts[0]) if len(parts) == 3 else None
            if match:
                out[int(match.group(1))] = int(parts[1])
        return out


def descendants(pid: int) -> list[int]:
    """Live descendants of ``pid`` (for the app: its ``tmux -C`` control clients)."""
    parent: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    parent[int(entry)] = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        kids = [child for child, ppid in parent.items() if ppid == current]
        found += kids
        todo += kids
    return found


def service_pids(socket: str) -> list[int]:
    """The ``nbs-tui service run`` process for this server and its descendants: a dashboard with
    ``service = "auto"`` starts it detached, so it is no descendant of the app, yet it is ours."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as fh:
                argv = fh.read().split(b"\0")
        except OSError:
            continue
        if b"service" in argv and b"run" in argv and socket.encode() in argv and any(b"nbs_tui" in a for a in argv):
            found += [int(entry), *descendants(int(entry))]
    return found


class ChildrenMeter:
    """CPU of a process's live descendants (and the server's service, when ``socket`` is given)
    over a window (% of one core)."""

    def __init__(self, pid: int, socket: str | None = None) -> None:
        self.t0 = time.monotonic()
        self.pid = pid
        self.socket = socket
        self.start = {child: self._ticks(child) for child in self._members()}

    def _members(self) -> list[int]:
        return descendants(self.pid) + (service_pids(self.socket) if self.socket else [])

    @staticmethod
    def _ticks(pid: int) -> int:
        try:
            return cpu_ticks(pid)
        except (OSError, IndexError, ValueError):
            return -1

    def percent(self) -> float:
        wall = time.monotonic() - self.t0
        used = 0
        for child in self._members():
            now, before = self._ticks(child), self.start.get(child, 0)
            if now >= 0 and before >= 0:
                used += now - before
        return 100.0 * used / TICK / wall


class MachineMeter:
    """How busy the whole machine was (all cores, % of their total), from /proc/stat."""

    def __init__(self) -> None:
        self.busy0, self.total0 = self._read()

    @staticmethod
    def _read() -> tuple[int, int]:
        with open("/proc/stat") as fh:
            values = [int(v) for v in fh.readline().split()[1:]]
        idle = values[3] + values[4]  # idle + iowait
        total = sum(values[:8])  # guest time is already in user
        return total - idle, total

    def percent(self) -> float:
        busy, total = self._read()
        return 100.0 * (busy - self.busy0) / max(1, total - self.total0)


class WakeLateness:
    """Scheduler noise: how late a thread sleeping 20 ms at a time wakes up (ms)."""

    def __init__(self) -> None:
        self.late: list[float] = []
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._run, name="wake", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop_event.is_set():
            began = time.monotonic_ns()
            time.sleep(0.02)
            self.late.append((time.monotonic_ns() - began) / 1e6 - 20.0)

    def stop(self) -> list[float]:
        self.stop_event.set()
        self.thread.join(1)
        return self.late


# -- the app in a pty ----------------------------------------------------------------------------


class AppInPty:
    """The nbs-tui CLI in a pty of ``size`` (COLS x ROWS); a thread drains and timestamps its output."""

    def __init__(
        self, argv: list[str], env: dict[str, str], panes: int, cwd: Path, nice: int = 0, size: tuple[int, int] = (COLS, ROWS)
    ) -> None:
        self.panes = panes
        self.cols, self.rows = size
        env = {**env, "COLUMNS": str(self.cols), "LINES": str(self.rows)}
        self.seen: dict[int, int] = {}
        """marker seq -> monotonic ns of the first read holding the whole token."""
        self.stamped: dict[int, tuple[int, int]] = {}
        """marker seq -> (the token's own time_ns, CLOCK_REALTIME ns of that first read): a
        ``--plain`` writer stamps its lines with the wall clock."""
        self.out_bytes = 0
        self.listed_ns = 0
        self.painted_ns = 0
        self.full_frame_ns = 0
        self.full_frame = threading.Event()
        self.tail = collections.deque[bytes](maxlen=64)
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", self.rows, self.cols, 0, 0))
        self.master = master
        self.launched_ns = time.monotonic_ns()
        self.proc = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd,
            start_new_session=True, close_fds=True, preexec_fn=(lambda: os.nice(nice)) if nice else None,
        )
        os.close(slave)
        self.reader = threading.Thread(target=self._read, name="pty-reader", daemon=True)
        self.reader.start()

    def _read(self) -> None:
        import pyte

        cols, rows_ = self.cols, self.rows
        screen: Any = pyte.Screen(cols, rows_)
        stream: Any = pyte.ByteStream(screen)
        want = f" {self.panes} panes"
        carry = b""
        while True:
            try:
                data = os.read(self.master, 1 << 16)
            except OSError:  # EIO: the app closed its terminal
                break
            if not data:
                break
            now = time.monotonic_ns()
            self.out_bytes += len(data)
            self.tail.append(data)
            buf = carry + data
            real = time.time_ns()
            for match in TOKEN.finditer(buf):
                seq = int(match.group(1))
                if seq not in self.seen:
                    self.seen[seq] = now
                    self.stamped[seq] = (int(match.group(2)), real)
            carry = buf[-40:]  # a token is at most ~30 bytes: one cut across two reads is seen whole
            if not self.full_frame.is_set():
                stream.feed(data)
                # not `screen.display`: it raises IndexError on a cell pyte left empty (a wide
                # character partly overwritten), which killed this reader and stalled the app
                rows = ["".join(screen.buffer[y][x].data for x in range(cols)) for y in range(rows_)]
                if not self.listed_ns and want in rows[0]:
                    self.listed_ns = now
                if not self.painted_ns and any(TOKEN_TEXT.search(row[cols // 2 - 10 :]) for row in rows):
                    self.painted_ns = now
                if self.listed_ns and self.painted_ns:
                    self.full_frame_ns = now
                    self.full_frame.set()

    def output(self) -> str:
        return b"".join(self.tail).decode("utf-8", "replace")

    def quit(self) -> None:
        try:
            os.write(self.master, b"q")
            self.proc.wait(15)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self.reader.join(5)
        os.close(self.master)


SERVICE_WAIT = 10.0
"""Seconds to wait, after the first full frame, for the service the dashboard starts (its
`SERVICE_DELAY` after the fleet's first seed, then a Python start and a seed of its own)."""


def wait_for_service(socket: str, timeout: float = SERVICE_WAIT) -> int | None:
    """The pid of the server's ``nbs-tui service`` once it runs; None if it never came.

    The CPU window then starts `SETTLE` later, so it holds the service's steady cost and not its
    start-up (~0.3 s of CPU: 2 points of a 15 s window, more than its steady cost).
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = service_pids(socket)  # the service first, then its descendants
        if found:
            return found[0]
        time.sleep(0.1)
    return None


def stop_service(socket: str, env: dict[str, str], checkout: Path = ROOT) -> None:
    """Stop the server's service (``nbs-tui service stop`` of ``checkout``, with the app's
    ``env``: its pid file is under the app's HOME) so that nothing of ours runs while the
    nbs-claude way is measured: its tmux commands would count as that way's tmux extra."""
    own = checkout / ".venv" / "bin" / "python"
    subprocess.run(
        [str(own) if own.exists() else sys.executable, "-m", "nbs_tui", "-L", socket, "service", "stop"],
        cwd=checkout, env=env, capture_output=True, timeout=30, check=False,
    )
    deadline = time.monotonic() + 10.0
    while service_pids(socket) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in service_pids(socket):  # did not stop in time: not ours to leave running
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def app_argv(socket: str, config: Path) -> list[str]:
    """What the operator runs (``nbs-tui -L SOCKET``), without /nbs-poll injections."""
    return [sys.executable, "-m", "nbs_tui", "-L", socket, "--no-poll", "--config", str(config)]


def compile_checkout(checkout: Path, python: str = sys.executable) -> None:
    """Byte-compile a checkout's ``nbs_tui`` as installing it does, so every launch imports
    bytecode as a user's does. (`app_env` lets the app write bytecode too: a shell with
    ``PYTHONDONTWRITEBYTECODE`` set, as here, would otherwise have each launch compile every
    module again, ~70 ms of the first frame.)"""
    subprocess.run([python, "-m", "compileall", "-q", str(checkout / "nbs_tui")], check=True)


def app_env(home: Path) -> dict[str, str]:
    hidden = ("TMUX", "TMUX_PANE", "NO_COLOR", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in hidden}
    env.update(TERM="xterm-256color", COLORTERM="truecolor", HOME=str(home), COLUMNS=str(COLS), LINES=str(ROWS))
    env.setdefault("LANG", "C.UTF-8")
    return env


# -- one N ------------------------------------------------------------------------------------


def run_app(
    socket: str, markers: Markers | None, server_pid: int, seconds: float, workdir: Path, n: int, nice: int = 0,
    size: tuple[int, int] = (COLS, ROWS),
) -> dict[str, Any]:
    """Launch the app once; first full frame, then a CPU and latency window."""
    home = workdir / "home"
    home.mkdir(exist_ok=True)
    config = workdir / "empty.toml"
    config.write_text("")
    app = AppInPty(app_argv(socket, config), app_env(home), n, ROOT, nice, size)
    out: dict[str, Any] = {}
    try:
        if not app.full_frame.wait(max(60.0, n * 0.6)):
            raise RuntimeError(
                f"N={n}: no full frame (listed={bool(app.listed_ns)}, painted={bool(app.painted_ns)}, "
                f"exit={app.proc.poll()}); last output: {app.output()[-600:]!r}"
            )
        out["first_frame_s"] = (app.full_frame_ns - app.launched_ns) / 1e9
        out["listed_s"] = (app.listed_ns - app.launched_ns) / 1e9
        out["painted_s"] = (app.painted_ns - app.launched_ns) / 1e9
        out["service_seen"] = wait_for_service(socket) is not None
        time.sleep(SETTLE)
        window_start = time.monotonic_ns()
        bytes0 = app.out_bytes
        cpu = CpuMeter(app.proc.pid, children=True)
        clients = ChildrenMeter(app.proc.pid, socket)
        server = CpuMeter(server_pid)
        machine = MachineMeter()
        wake = WakeLateness()
        time.sleep(seconds)
        out["wake"] = wake.stop()
        out["cpu"] = cpu.percent()
        out["clients"] = clients.percent()
        out["server"] = server.percent()
        out["machine"] = machine.percent()
        window_end = time.monotonic_ns()
        out["out_kbs"] = (app.out_bytes - bytes0) / 1024 / seconds
        out["rss_mb"] = peak_rss_mb(app.proc.pid)
        if markers is None:
            lat, missed, worst = _plain_latencies(app, window_start, window_end)
        else:
            lat, missed, worst = _marker_latencies(app, markers, window_start, window_end)
        out["lat"] = lat
        out["worst"] = sorted(worst, key=lambda x: -x[1])[:8]
        out["missed"] = missed
        if app.proc.poll() is not None:
            raise RuntimeError(f"N={n}: the app exited ({app.proc.returncode}): {app.output()[-600:]!r}")
    finally:
        app.quit()
    return out


def _marker_latencies(
    app: AppInPty, markers: Markers, window_start: int, window_end: int
) -> tuple[list[float], int, list[tuple[float, int]]]:
    """Latencies (ms) of the demo agent's markers written in the window, how many were never
    drawn, and the worst (seconds into the window, ms)."""
    written = {seq: at for seq, at in markers.written().items() if window_start <= at <= window_end}
    deadline = time.monotonic() + 5.0  # let the window's last markers reach the screen
    while time.monotonic() < deadline and not all(seq in app.seen for seq in written):
        time.sleep(0.05)
    lat, missed, worst = [], 0, []
    for seq, at in written.items():
        if seq in app.seen:
            lat.append((app.seen[seq] - at) / 1e6)
            worst.append((round((at - window_start) / 1e9, 2), round(lat[-1])))
        else:
            missed += 1
    return lat, missed, worst


def _plain_latencies(
    app: AppInPty, window_start: int, window_end: int
) -> tuple[list[float], int, list[tuple[float, int]]]:
    """The same for a ``--plain`` writer, whose lines carry their wall-clock write time: the
    lines of the mirrored pane written in the window (by sequence number, between the first and
    the last drawn), a gap in the numbers being a line never drawn."""
    time.sleep(1.0)
    offset = time.time_ns() - time.monotonic_ns()
    start_real, end_real = window_start + offset, window_end + offset
    drawn = {seq: (stamp, real) for seq, (stamp, real) in app.stamped.items() if start_real <= stamp <= end_real}
    if not drawn:
        return [], 0, []
    lat, worst = [], []
    for stamp, real in drawn.values():
        lat.append((real - stamp) / 1e6)
        worst.append((round((stamp - start_real) / 1e9, 2), round(lat[-1])))
    missed = max(drawn) - min(drawn) + 1 - len(drawn)
    return lat, missed, worst


def profile_app(socket: str, seconds: float, workdir: Path, n: int) -> str:
    """One more launch, sampled by py-spy for ``seconds`` (only the thread holding the GIL: the
    app's Python work; C work that released the GIL, such as a read, is not seen)."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(spy).exists():
        return "py-spy not installed (.venv/bin/pip install py-spy)"
    config = workdir / "empty.toml"
    app = AppInPty(app_argv(socket, config), app_env(workdir / "home"), n, ROOT)
    raw = workdir / f"profile-{n}.txt"
    try:
        if not app.full_frame.wait(max(60.0, n * 0.6)):
            return "no full frame: not profiled"
        time.sleep(SETTLE)
        subprocess.run(
            [spy, "record", "--pid", str(app.proc.pid), "--duration", str(int(seconds)), "--rate", "200",
             "--format", "raw", "--threads", "--gil", "--nonblocking", "--output", str(raw)],
            capture_output=True, check=False,
        )
    finally:
        app.quit()
    if not raw.exists():
        return "py-spy wrote nothing (ptrace not permitted?)"
    keep = ROOT / "bench" / "results" / f"app-profile-{n}-{time.strftime('%Y%m%d-%H%M%S')}.txt"
    keep.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(raw, keep)
    return summarize_profile(raw.read_text(), seconds) + f"\n(collapsed stacks: {keep.relative_to(ROOT)})\n"


WHERE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("UI: mirror rows (MirrorRows.render_line)", ("MirrorRows.render_line", "ScreenWidget.render_line")),
    ("UI: fleet list rows (FleetList.render_line)", ("FleetList.render_line",)),
    ("UI: layout (Screen._refresh_layout)", ("Screen._refresh_layout", "Compositor.reflow")),
    ("UI: other widgets, line filters, compositor, output", ("Compositor.render_update", "App._display",
                                                           "Widget.render_lines")),
)


def where(stack: str) -> str:
    """The part of the app a collapsed main-thread stack belongs to."""
    for label, marks in WHERE:
        if any(mark in stack for mark in marks):
            return label
    frames = [f for f in stack.split(";") if "nbs_tui/" in f and "__main__" not in f and "cli.py" not in f
              and "run_operator_app" not in f]
    return "UI thread: " + (frames[0].split(" (")[0] if frames else "Textual/asyncio housekeeping")


def summarize_profile(text: str, seconds: float, top: int = 20) -> str:
    """Per thread and per part of the UI thread, then the functions with the most samples."""
    own: collections.Counter[str] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()
    threads: collections.Counter[str] = collections.Counter()
    parts: collections.Counter[str] = collections.Counter()
    samples = 0
    for line in text.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = stack.split(";")
        samples += count
        thread = frames[0].rpartition(":")[2].strip()
        threads[thread] += count
        parts[where(stack) if thread == "MainThread" else f"thread {thread}"] += count
        own[frames[-1]] += count
        for frame in set(frames[1:]):
            total[frame] += count
    if not samples:
        return "no samples"
    rate = 200 * seconds  # samples of a thread holding the GIL all the time

    def pct(count: int) -> str:
        return f"{100 * count / rate:.1f} %"

    lines = [
        f"{samples} samples at 200 Hz over {seconds:.0f} s, only of the thread holding the GIL: % of wall time "
        "it held the GIL (on a loaded machine this includes time it was preempted holding it; compare shares)",
        "", "| where | GIL held |", "|---|---|",
    ]
    lines += [f"| {name[:90]} | {pct(c)} |" for name, c in parts.most_common(12)]
    lines += ["", "| function (self) | GIL held |", "|---|---|"]
    lines += [f"| `{name[:110]}` | {pct(c)} |" for name, c in own.most_common(top)]
    lines += ["", "| function (inclusive, asyncio/runpy frames left out) | GIL held |", "|---|---|"]
    shown = [(n, c) for n, c in total.most_common(top * 3) if not any(x in n for x in ("asyncio", "runpy", "threading.py"))]
    lines += [f"| `{name[:110]}` | {pct(c)} |" for name, c in shown[:top]]
    return "\n".join(lines) + "\n"


def measure(
    n: int, seconds: float, launches: int, workdir: Path, profile: bool, nice: int = 0, spread: bool = False,
    plain: bool = False,
) -> dict[str, Any]:
    markers_dir = workdir / f"markers-{n}"
    print(f"N={n}: starting the fleet ...", file=sys.stderr, flush=True)
    fleet: DemoFleet | Bench
    markers: Markers | None = None
    if plain:  # bench_mirror's fleet: a quarter of the panes print a stamped line every ~100 ms
        fleet = Bench(n, workdir)
        fleet.start()
        socket, server_pid = fleet.socket, fleet.server_pid
    else:
        fleet = DemoFleet.start_busy(n, busy_fraction=0.25, marker_dir=markers_dir, spread=spread)
        agent = fleet.agent(MARKED)
        assert agent.marker_fifo is not None and agent.marker_file is not None
        markers = Markers(agent.marker_fifo, agent.marker_file)
        markers.start()
        server_pid = int(fleet.tmux("display-message", "-p", "#{pid}").strip())
        assert fleet.server.socket_name is not None
        socket = fleet.server.socket_name
    row: dict[str, Any] = {"n": n, "busy": max(1, n // 4) if plain else round(n * 0.25)}
    try:
        if nice:  # diagnostic: the app and the fleet's (private) server ahead of the machine's other load
            os.setpriority(os.PRIO_PROCESS, server_pid, nice)
        time.sleep(2.0)
        base = CpuMeter(server_pid)
        time.sleep(seconds)
        row["server_base"] = base.percent()

        runs = []
        for launch in range(launches):
            print(f"N={n}: app launch {launch + 1}/{launches} ...", file=sys.stderr, flush=True)
            runs.append(run_app(socket, markers, server_pid, seconds, workdir, n, nice, PLAIN_SIZE if plain else (COLS, ROWS)))
            time.sleep(1.0)
        lat = [x for r in runs for x in r["lat"]]
        # a marker never drawn scrolled off the pane before the app painted (a stall of >~1 s):
        # it counts as infinitely late in the percentiles
        censored = lat + [float("inf")] * sum(r["missed"] for r in runs)
        row["first_frame_s"] = statistics.median(r["first_frame_s"] for r in runs)
        row["listed_s"] = statistics.median(r["listed_s"] for r in runs)
        row["painted_s"] = statistics.median(r["painted_s"] for r in runs)
        row["first_frames"] = [round(r["first_frame_s"], 2) for r in runs]
        row["service_seen"] = all(r["service_seen"] for r in runs)
        row["ours_cpu"] = statistics.median(r["cpu"] for r in runs)
        row["ours_clients"] = statistics.median(r["clients"] for r in runs)
        row["ours_server_extra"] = statistics.median(r["server"] for r in runs) - row["server_base"]
        row["ours_rss_mb"] = max(r["rss_mb"] for r in runs)
        row["out_kbs"] = statistics.median(r["out_kbs"] for r in runs)
        row["machine"] = statistics.median(r["machine"] for r in runs)
        wake = [x for r in runs for x in r["wake"]]
        row["wake_p50"] = statistics.median(wake) if wake else float("nan")
        row["wake_p99"] = percentile(wake, 0.99)
        row["worst"] = [r["worst"] for r in runs]
        row["ours_p50"] = percentile(censored, 0.5)
        row["ours_p99"] = percentile(censored, 0.99)
        row["ours_max"] = max(lat) if lat else float("nan")
        row["ours_samples"] = len(lat)
        row["ours_missed"] = sum(r["missed"] for r in runs)

        stop_service(socket, app_env(workdir / "home"))
        time.sleep(1.0)
        print(f"N={n}: nbs-claude way ...", file=sys.stderr, flush=True)
        result, row["theirs_server_extra"] = measure_nbs_claude(
            "--poller-child", socket, server_pid, row["server_base"], seconds
        )
        row["theirs_cpu"] = float(result.get("cpu_percent", float("nan")))
        theirs = list(result.get("latencies", []))
        row["theirs_p50"] = statistics.median(theirs) if theirs else float("nan")
        row["theirs_p99"] = percentile(theirs, 0.99)
        row["theirs_samples"] = len(theirs)
        print(f"N={n}: nbs-claude sidecars ...", file=sys.stderr, flush=True)
        sidecars, row["sidecars_server_extra"] = measure_nbs_claude(
            "--sidecars-child", socket, server_pid, row["server_base"], seconds
        )
        row["sidecars_cpu"] = float(sidecars.get("cpu_percent", float("nan")))

        if profile:
            print(f"N={n}: profiling the app ...", file=sys.stderr, flush=True)
            row["profile"] = profile_app(socket, seconds, workdir, n)
        if markers is not None:
            markers.stop()
    finally:
        fleet.stop()
    return row


# -- report -------------------------------------------------------------------------------------


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| N (busy) | first full frame (panes listed / mirror painted) | on screen p50 / p99 / max ms (samples, missed) "
        "| nbs-tui CPU (app + its tmux -C clients and service) | tmux extra (nbs-tui) | nbs-tui peak RSS | app output | nbs-claude p50 / p99 ms "
"| nbs-claude captures CPU | tmux extra (captures) | ours+server vs captures+server "
        "| nbs-claude sidecars CPU + tmux extra | ours+server vs sidecars+server | machine busy; wake-up late p50 / p99 |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    body = ""
    for r in rows:
        ours = r["ours_cpu"] + r["ours_clients"] + r["ours_server_extra"]
        theirs = r["theirs_cpu"] + r["theirs_server_extra"]
        sidecars = r["sidecars_cpu"] + r["sidecars_server_extra"]
        body += (
            f"| {r['n']} ({r['busy']}) | {r['first_frame_s']:.2f} s ({r['listed_s']:.2f} / {r['painted_s']:.2f}) "
            f"| {r['ours_p50']:.1f} / {r['ours_p99']:.1f} / {r['ours_max']:.0f} ({r['ours_samples']}, {r['ours_missed']}) "
            f"| {r['ours_cpu'] + r['ours_clients']:.1f} % ({r['ours_cpu']:.1f} + {r['ours_clients']:.1f}) "
            f"| {r['ours_server_extra']:.1f} % | {r['ours_rss_mb']:.0f} MB | {r['out_kbs']:.0f} KB/s "
            f"| {r['theirs_p50']:.0f} / {r['theirs_p99']:.0f} | {r['theirs_cpu']:.1f} % | {r['theirs_server_extra']:.1f} % "
            f"| {ours:.1f} % vs {theirs:.1f} % ({ours / theirs:.2f}x) "
            f"| {r['sidecars_cpu']:.1f} % + {r['sidecars_server_extra']:.1f} % | {ours:.1f} % vs {sidecars:.1f} % ({ours / sidecars:.2f}x) "
            f"| {r['machine']:.0f} %; {r['wake_p50']:.1f} / {r['wake_p99']:.0f} ms |\n"
        )
    return head + body


LEGEND = """\
- first full frame: launch of the CLI process until the app's terminal output (fed to a pyte
  screen) shows `N panes` in the status bar and a marker inside the mirror; in brackets when
  each happened first.
- on screen: agent `bench-0` (selected at launch) writes a marker to its pty -> the first read
  of the app's pty output that holds the whole marker text; samples = markers written in the
  window, missed = never on screen (it scrolled off the 24-row pane before the app painted,
  i.e. a stall of more than ~1 s); missed markers count as infinitely late in p50 / p99.
- nbs-tui CPU: the CLI process (all threads, reaped children) plus its live `tmux -C` control
  client processes and the server's `nbs-tui service` (started by the app, detached) with its
  own, over a window that starts 2 s after the first full frame and the service's start (so
  not its start-up); tmux extra: the server's CPU minus the baseline with nothing attached;
  peak RSS: the app's VmHWM; app output: bytes/s written to its terminal.
- nbs-claude captures: one `tmux capture-pane -p` subprocess per pane per second (bench_mirror's
  poller), measured after the app quit and the service was stopped; latency from writing the
  marker into the agent's FIFO to the capture holding it. A lower bound: nbs-claude's loop runs
  this capture and more.
- nbs-claude sidecars: one bash loop per pane (`bench/nbs_claude_sidecar.sh`: each second the
  seeds' sidecar's processes, list-panes, capture-pane, md5sum, greps; types nothing), after
  the captures; their CPU with the processes they ran, and the server's extra.
- machine busy: all cores during the app window (other users included); wake-up late: how
  late a thread sleeping 20 ms woke up during that window (scheduler noise).
"""


def goals(rows: list[dict[str, Any]]) -> str:
    lines = []
    for r in rows:
        ours = r["ours_cpu"] + r["ours_clients"] + r["ours_server_extra"]
        theirs = r["theirs_cpu"] + r["theirs_server_extra"]
        sidecars = r["sidecars_cpu"] + r["sidecars_server_extra"]
        if not r.get("service_seen", True):
            lines.append(f"- N={r['n']}: the app started no sidecar service: its CPU is the app's alone")
        if r["n"] == 50:
            ok = r["ours_p99"] < 50 and r["ours_missed"] == 0
            lines.append(f"- N=50: p99 on screen {r['ours_p99']:.1f} ms (goal < 50 ms): {'met' if ok else 'MISSED'}")
        for way, cost in (("nbs-claude's sidecars", sidecars), ("its captures alone (lower bound)", theirs)):
            lines.append(
                f"- N={r['n']}: nbs-tui + its server extra {ours:.1f} % vs {way} {cost:.1f} % "
                f"(goal at most half, {ours / cost:.2f}x): {'met' if ours <= cost / 2 else 'MISSED'}"
            )
        if r["n"] == 200:
            mine = r["ours_cpu"] + r["ours_clients"]
            lines.append(f"- N=200: nbs-tui CPU {mine:.1f} % with its tmux clients (goal < 25 %): {'met' if mine < 25 else 'MISSED'}")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="*", default=[10, 50, 200])
    parser.add_argument("--seconds", type=float, default=15.0, help="length of each measuring window")
    parser.add_argument("--launches", type=int, default=1, help="app launches per N (medians; latencies pooled)")
    parser.add_argument("--profile", action="store_true", help="then one more launch per N under py-spy")
    parser.add_argument(
        "--spread", action="store_true",
        help="busy agents one in four, so in every window and session (default: the first quarter, whole sessions)",
    )
    parser.add_argument(
        "--plain", action="store_true",
        help="plain panes instead of demo agents: bench_mirror's fleet (120x40 panes, a quarter printing a "
        "stamped coloured line every ~100 ms, the rest in cat); the mirrored pane is its first writer",
    )
    parser.add_argument(
        "--nice", type=int, default=0,
        help="diagnostic: run the app and the fleet's tmux server at this nice value (e.g. -10, needs root)",
    )
    opts = parser.parse_args(argv)
    compile_checkout(ROOT)
    workdir = Path(tempfile.mkdtemp(prefix="nbs-bench-app-"))
    rows = []
    load_before = f"{os.getloadavg()[0]:.1f}"
    git = ["git", "-C", str(ROOT)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no", "nbs_tui"],
                           capture_output=True, text=True).stdout.strip()
    try:
        for n in opts.sizes:
            rows.append(measure(n, opts.seconds, opts.launches, workdir, opts.profile, opts.nice, opts.spread, opts.plain))
            shown = {k: v for k, v in rows[-1].items() if k != "profile"}
            print(json.dumps(shown), file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report = f"## nbs-tui dashboard vs the nbs-claude way ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})\n\n"
    report += (
        f"`{' '.join(['.venv/bin/python', 'bench/bench_app.py', *(argv if argv is not None else sys.argv[1:])])}`; "
        f"{os.cpu_count()} cores; windows of {opts.seconds:.0f} s; {opts.launches} app launch(es) per N; "
        + (f"app and tmux server at nice {opts.nice} (diagnostic); " if opts.nice else "")
        + ("plain panes (bench_mirror's fleet), not demo agents; " if opts.plain else "")
        + f"CPU in % of one core; load average before/after {load_before} / {os.getloadavg()[0]:.1f}; "
        + f"code at {head}{' with uncommitted edits in nbs_tui/' if dirty else ''}.\n\n"
    )
    report += table(rows) + "\n" + LEGEND + "\n" + goals(rows)
    for r in rows:
        report += f"\nN={r['n']}: worst on-screen latencies per launch (s into the window, ms): {r['worst']}"
    report += "\n"
    for r in rows:
        if "profile" in r:
            report += f"\n### py-spy of the app at N={r['n']}\n\n{r['profile']}"
    print(report)
    results = ROOT / "bench" / "results"
    results.mkdir(parents=True, exist_ok=True)
    path = results / f"app-{time.strftime('%Y%m%d-%H%M%S')}.md"
    path.write_text(report)
    print(f"saved {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
