"""Benchmark the sidecar lease: what holding it, watching it and publishing pane state cost.

Run on demand (not part of the test suite)::

    .venv/bin/python bench/bench_lease.py                     # N = 50, 200; 20 s windows
    .venv/bin/python bench/bench_lease.py --sizes 50 --seconds 10 --watchers 2

For each N: a private tmux server with N panes (``cat``, 4 per window). First a baseline window
with nothing attached (the tmux server's own CPU). Then one *holder* process (a
`LeaseHeartbeat` thread at the default ttl, plus what the sidecar does each 1 s tick with the
lease: one `SidecarSwitches.read` and one `PaneOptionsPublisher.publish` in which
``--change`` of the panes (default 10 %) changed state) and ``--watchers`` *viewer* processes
(heartbeat only, contending: what a second dashboard or `--headless` does), for a
``--seconds`` window. Reported: tmux commands a second (every ``tmux`` process the children
ran), CPU (% of one core, from /proc/PID/stat, reaped ``tmux`` children included) of the holder,
of each watcher and the tmux server's extra CPU over baseline.
CPU is counted from the window's start only (no Python start-up). Results: a markdown table on
stdout and in bench/results/lease-YYYYmmdd-HHMMSS.md (gitignored).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))

from nbs_tui.core.fleet.model import ServerAddress  # noqa: E402
from nbs_tui.sidecar.heartbeat import LeaseHeartbeat  # noqa: E402
from nbs_tui.sidecar.pane_options import (  # noqa: E402
    PaneOptionsPublisher,
    PublishedState,
    SidecarSwitches,
)
from nbs_tui.tmux.commands import TmuxServerCommands  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")
STATES = ("idle", "working", "plan", "question", "stuck")


def cpu_seconds(pid: int, children: bool = True) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    total = utime + stime + ((cutime + cstime) if children else 0)
    return total / TICKS


def child(mode: str, socket_name: str, seconds: float, change: float) -> None:
    commands = TmuxServerCommands.for_server(ServerAddress(socket_name=socket_name))  # counts its processes
    beat = LeaseHeartbeat(commands, contend=True)
    beat.start()
    if mode == "holder":
        deadline = time.monotonic() + 30
        while not beat.holding:
            if time.monotonic() > deadline:
                raise SystemExit("holder never got the lease")
            time.sleep(0.05)
    print("ready", flush=True)
    sys.stdin.readline()  # the window starts
    start_runs, start_cpu, start = commands.process_runs, cpu_seconds(os.getpid()), time.monotonic()
    changed = 0
    if mode == "holder":
        publisher = PaneOptionsPublisher(commands)
        switches = SidecarSwitches(commands)
        publisher.clear_stale()
        panes = [
            line for line in commands.run("list-panes", "-a", "-F", "#{pane_id}").lines if line
        ]
        states = {p: PublishedState(random.choice(STATES), "", int(time.time())) for p in panes}
        rng = random.Random(1)
        next_tick = time.monotonic()
        while time.monotonic() - start < seconds:
            switches.read()
            for pane in rng.sample(panes, max(1, int(len(panes) * change))):
                state = rng.choice(STATES)
                needs = state if state in ("plan", "question", "stuck") else ""
                states[pane] = PublishedState(state, needs, int(time.time()))
            changed += publisher.publish(states)
            next_tick += 1.0
            time.sleep(max(0.0, next_tick - time.monotonic()))
    else:
        time.sleep(seconds)
    elapsed = time.monotonic() - start
    print(
        json.dumps(
            {
                "mode": mode,
                "runs": commands.process_runs - start_runs,
                "cpu": cpu_seconds(os.getpid()) - start_cpu,
                "elapsed": elapsed,
                "holding": beat.holding,
                "options_changed": changed,
            }
        ),
        flush=True,
    )
    beat.stop()


def run_size(n: int, seconds: float, watchers: int, change: float) -> dict[str, float]:
    socket_name = f"nbs-bench-lease-{os.getpid()}-{n}"
    tmux = ["tmux", "-L", socket_name, "-f", "/dev/null"]
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    subprocess.run([*tmux, "new-session", "-d", "-x", "160", "-y", "48", "cat"], check=True, env=env)
    try:
        window = "0"
        for made in range(1, n):
            if made % 4 == 0:
                window = subprocess.run(
                    [*tmux, "new-window", "-d", "-P", "-F", "#{window_id}", "cat"],
                    check=True, capture_output=True, text=True, env=env,
                ).stdout.strip()
            else:
                subprocess.run([*tmux, "split-window", "-d", "-t", window, "cat"], check=True, env=env)
                subprocess.run([*tmux, "select-layout", "-t", window, "tiled"], check=True, env=env)
        count = len(subprocess.run([*tmux, "list-panes", "-a"], capture_output=True, text=True, env=env).stdout.splitlines())
        server_pid = int(subprocess.run([*tmux, "display", "-p", "#{pid}"], capture_output=True, text=True, env=env).stdout)
        time.sleep(1.0)
        base0 = cpu_seconds(server_pid, children=False)
        time.sleep(seconds)
        baseline = (cpu_seconds(server_pid, children=False) - base0) / seconds

        procs = []
        for mode in ["holder"] + ["watcher"] * watchers:
            proc = subprocess.Popen(
                [sys.executable, __file__, "--child", mode, "--socket", socket_name,
                 "--seconds", str(seconds), "--change", str(change)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
            )
            assert proc.stdout is not None
            if proc.stdout.readline().strip() != "ready":
                raise SystemExit(f"{mode} did not start")
            procs.append(proc)
        time.sleep(1.0)  # watchers have seen the holder
        server0 = cpu_seconds(server_pid, children=False)
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        results = []
        for proc in procs:
            assert proc.stdout is not None
            results.append(json.loads(proc.stdout.readline()))
        server = (cpu_seconds(server_pid, children=False) - server0) / seconds
        for proc in procs:
            proc.wait(20)
        holder = results[0]
        watch = results[1:]
        return {
            "panes": count,
            "holder_cmds": holder["runs"] / holder["elapsed"],
            "holder_cpu": 100 * holder["cpu"] / holder["elapsed"],
            "options_per_s": holder["options_changed"] / holder["elapsed"],
            "watcher_cmds": sum(w["runs"] / w["elapsed"] for w in watch) / max(1, len(watch)),
            "watcher_cpu": sum(100 * w["cpu"] / w["elapsed"] for w in watch) / max(1, len(watch)),
            "server_extra": 100 * (server - baseline),
            "server_base": 100 * baseline,
            "holders": sum(1 for r in results if r["holding"]),
        }
    finally:
        subprocess.run([*tmux, "kill-server"], check=False, env=env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="50,200")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--watchers", type=int, default=2)
    parser.add_argument("--change", type=float, default=0.1, help="fraction of panes changing state a tick")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--socket", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.socket, args.seconds, args.change)
        return
    rows = [
        "| panes | holder tmux cmds/s | holder CPU % | options set/s | watcher tmux cmds/s | watcher CPU % | tmux server extra CPU % (base) | holders |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for n in (int(s) for s in args.sizes.split(",")):
        r = run_size(n, args.seconds, args.watchers, args.change)
        rows.append(
            f"| {r['panes']:.0f} | {r['holder_cmds']:.2f} | {r['holder_cpu']:.1f} | {r['options_per_s']:.1f} "
            f"| {r['watcher_cmds']:.2f} | {r['watcher_cpu']:.2f} | {r['server_extra']:.2f} ({r['server_base']:.2f}) "
            f"| {r['holders']:.0f} |"
        )
        print(rows[-1], flush=True)
    table = "\n".join(rows)
    print()
    print(table)
    out = BENCH / "results"
    out.mkdir(exist_ok=True)
    (out / time.strftime("lease-%Y%m%d-%H%M%S.md")).write_text(
        f"bench_lease.py {' '.join(sys.argv[1:])}\n\n{table}\n"
    )


if __name__ == "__main__":
    main()
