"""CPU of ``nbs-tui --headless`` watching a fleet of imitation agents, against the nbs-claude way.

    .venv/bin/python bench/bench_headless.py [--agents 50 200] [--seconds 30] [--busy 0.25]
        [--before PATH]

For each size it starts a private tmux server with that many demo agents (nbs_tui/demo: varied
scripts that work, idle, ask permission, reach plan menus and print ``\\nbs-`` lines; with
``--busy F`` a fraction F of them print 10 coloured lines a second instead), then, one after
another on the same fleet:

* baseline: nothing watches; the tmux server's CPU is the reference for "extra" CPU;
* ``--before PATH``: ``nbs-tui --headless`` run from another checkout (e.g. a worktree at the
  commit before a change), so before and after are measured in the same run window;
* ``nbs-tui -L <socket> --headless --poll-interval 10`` from this checkout (``--poll-interval``
  sets it: 3600 types no polls, like for like with the poller below, which types none);
* the nbs-claude way, twice: bench_mirror's poller (one ``tmux capture-pane -p`` subprocess per
  pane per second: a lower bound, the one process nbs-claude's loop cannot do without), then
  its sidecars as they run (``bench/nbs_claude_sidecar.sh``, one bash loop per pane: the same
  processes each second as the seeds' sidecar), each with its subprocesses.

Each gets a warm-up, then a window: its CPU (user+system from /proc, % of one core; for
headless with its children: the ``tmux`` commands it ran and its live ``tmux -C`` control
clients; for the poller with its ``capture-pane`` processes), the server's extra CPU, its
resident memory, how long it took to stop on SIGTERM, and (for headless) how many events of
each kind it printed. The agents' own CPU is not counted. The table is printed and saved to bench/results/.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_mirror import TICK, CpuMeter, cpu_ticks, measure_nbs_claude  # noqa: E402

from nbs_tui.demo.launcher import DemoFleet  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def child_pids(pid: int) -> list[int]:
    kids: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            kids.extend(int(k) for k in (task / "children").read_text().split())
        except OSError:
            continue
    return kids


class TreeMeter:
    """CPU of a process with its children: the reaped ones (``tmux`` commands it ran) and the
    live ones (its ``tmux -C`` control clients, which relay every reply)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.t0 = time.monotonic()
        self.c0 = self._ticks()

    def _ticks(self) -> dict[int, int]:
        ticks = {self.pid: cpu_ticks(self.pid, children=True)}
        for kid in child_pids(self.pid):
            try:
                ticks[kid] = cpu_ticks(kid, children=True)
            except OSError:
                continue
        return ticks

    def percent(self) -> tuple[float, float]:
        """(the process and its reaped children, its live children) in % of one core."""
        wall = time.monotonic() - self.t0
        now = self._ticks()
        own = now[self.pid] - self.c0[self.pid]
        kids = sum(t - self.c0.get(pid, 0) for pid, t in now.items() if pid != self.pid)
        return 100.0 * own / TICK / wall, 100.0 * kids / TICK / wall


def server_pid(fleet: DemoFleet) -> int:
    out = subprocess.run(
        ["tmux", *fleet.server.tmux_args(), "display-message", "-p", "#{pid}"],
        capture_output=True, text=True, check=True,
    ).stdout
    return int(out.strip())


def run_headless(
    fleet: DemoFleet, code: Path, warmup: float, seconds: float, base: float, spid: int, poll_interval: float = 10.0
) -> dict[str, Any]:
    """``nbs-tui --headless`` from the checkout ``code`` for a warm-up and a window."""
    env = dict(os.environ, PYTHONPATH=str(code))
    cmd = [sys.executable, "-m", "nbs_tui", *fleet.server.tmux_args(), "--headless",
           "--poll-interval", f"{poll_interval:g}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=code, env=env)
    counts: collections.Counter[str] = collections.Counter()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            try:
                event = json.loads(line)
                kind = event.get("event", "?")
                counts[f"{kind}:{event['result']}" if "result" in event else kind] += 1
            except ValueError:
                counts["<not json>"] += 1

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    time.sleep(warmup)
    counts.clear()
    ours, server = TreeMeter(proc.pid), CpuMeter(spid)
    time.sleep(seconds)
    own, clients = ours.percent()
    result: dict[str, Any] = {
        "cpu": own + clients, "clients": clients, "server_extra": server.percent() - base, "rss": rss_mb(proc.pid)
    }
    proc.terminate()
    stopping = time.monotonic()
    try:
        result["code"] = proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        result["code"] = proc.wait(10)
    result["stop"] = time.monotonic() - stopping
    reader.join(5)
    stderr = proc.stderr.read() if proc.stderr else ""
    result["events"] = dict(counts)
    if result["code"] != 0 and stderr:
        print(stderr[-2000:], file=sys.stderr)
    return result


def run_nbs_claude(mode: str, fleet: DemoFleet, seconds: float, base: float, spid: int) -> dict[str, Any]:
    done, extra = measure_nbs_claude(mode, fleet.server.socket_name or "", spid, base, seconds)
    return {
        "cpu": float(done.get("cpu_percent", float("nan"))), "clients": 0.0, "server_extra": extra, "rss": 0.0,
        "events": {}, "stop": 0.0,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, nargs="*", default=[50])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument("--busy", type=float, default=0.0, help="fraction of agents printing 10 lines/s")
    parser.add_argument("--before", type=Path, default=None, help="another checkout's headless, measured too")
    parser.add_argument("--poll-interval", type=float, default=10.0,
                        help="headless's idle seconds before /nbs-poll (the nbs-claude way here types no polls: "
                        "3600 compares like for like, since each poll starts a turn tmux must draw)")
    args = parser.parse_args()

    load_before = os.getloadavg()[0]
    report = f"## --headless vs the nbs-claude way ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})\n\n"
    kind = f"{args.busy:.0%} busy at 10 lines/s" if args.busy > 0 else "demo scripts at 2x speed"
    report += (
        f"Demo agents ({kind}); {args.warmup:.0f} s warm-up, {args.seconds:.0f} s windows; CPU in % of one core; "
        f"{os.cpu_count()} cores; load average before {load_before:.1f}; headless polls after {args.poll_interval:g} s idle"
    )
    rows = ""
    events = ""
    for n in args.agents:
        print(f"measuring {n} agents ...", file=sys.stderr, flush=True)
        fleet = DemoFleet.start_busy(n, args.busy) if args.busy > 0 else DemoFleet.start(agents=n, speed=2.0)
        try:
            spid = server_pid(fleet)
            time.sleep(args.warmup)
            meter = CpuMeter(spid)
            time.sleep(args.seconds)
            base = meter.percent()
            ways: list[tuple[str, dict[str, Any]]] = []
            if args.before is not None:
                ways.append((f"--headless, code before ({args.before.name})",
                             run_headless(fleet, args.before, args.warmup, args.seconds, base, spid, args.poll_interval)))
            ways.append(("--headless, this code", run_headless(fleet, REPO, args.warmup, args.seconds, base, spid, args.poll_interval)))
            ways.append(("nbs-claude way, captures only (lower bound)", run_nbs_claude("--poller-child", fleet, args.seconds, base, spid)))
            ways.append(("nbs-claude way, its sidecars", run_nbs_claude("--sidecars-child", fleet, args.seconds, base, spid)))
        finally:
            fleet.stop()
        captures, sidecars = (ways[k][1]["cpu"] + ways[k][1]["server_extra"] for k in (-2, -1))
        for name, r in ways:
            total = r["cpu"] + r["server_extra"]
            rss = f"{r['rss']:.0f} MB" if r["rss"] else "-"
            rows += (
                f"| {n} | {name} | {r['cpu']:.1f} % | {r['clients']:.1f} % | {r['server_extra']:.1f} % | {total:.1f} % "
                f"| {total / captures:.2f}x | {total / sidecars:.2f}x | {rss} | {r['stop']:.1f} s |\n"
            )
            if r["events"]:
                events += f"- {n} agents, {name}: " + ", ".join(f"{k}={v}" for k, v in sorted(r["events"].items())) + "\n"
        print(rows, file=sys.stderr, flush=True)
    report += f", after {os.getloadavg()[0]:.1f}.\n\n"
    report += (
        "| agents | way | its CPU (children incl.) | of which tmux -C clients | tmux extra | total "
        "| vs nbs-claude captures | vs nbs-claude sidecars | RSS | stop took |\n|---|---|---|---|---|---|---|---|---|---|\n"
    )
    report += rows + "\nEvents printed in the window:\n\n" + events
    print(report)
    results = REPO / "bench" / "results"
    results.mkdir(parents=True, exist_ok=True)
    path = results / f"headless-{time.strftime('%Y%m%d-%H%M%S')}.md"
    path.write_text(report)
    print(f"saved {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
