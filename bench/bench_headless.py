"""CPU of ``nbs-tui --headless`` watching a fleet of imitation agents.

    .venv/bin/python bench/bench_headless.py [--agents 50] [--seconds 30] [--busy 0.0]

Starts a private tmux server with ``--agents`` demo agents (nbs_tui/demo: varied scripts that
work, idle, ask permission, reach plan menus and print ``\\nbs-`` lines; with ``--busy F`` a
fraction F of them print 10 coloured lines a second instead), runs ``nbs-tui -L <socket>
--headless --poll-interval 10`` against it for ``--seconds`` after a warm-up, and reports the
headless process's CPU (user+system from /proc, as a percentage of one core), its resident
memory and how many events of each kind it printed. The agents' own CPU is not counted.
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

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from nbs_tui.demo.launcher import DemoFleet  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--warmup", type=float, default=5.0)
    parser.add_argument(
        "--busy", type=float, default=0.0, help="fraction of agents printing 10 lines/s"
    )
    args = parser.parse_args()

    if args.busy > 0:
        fleet = DemoFleet.start_busy(args.agents, args.busy)
    else:
        fleet = DemoFleet.start(agents=args.agents, speed=2.0)
    counts: collections.Counter[str] = collections.Counter()
    try:
        cmd = [
            sys.executable,
            "-m",
            "nbs_tui",
            *fleet.server.tmux_args(),
            "--headless",
            "--poll-interval",
            "10",
        ]
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO
        )

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
        time.sleep(args.warmup)
        counts.clear()
        start_cpu, start = cpu_seconds(proc.pid), time.monotonic()
        time.sleep(args.seconds)
        used, elapsed = cpu_seconds(proc.pid) - start_cpu, time.monotonic() - start
        memory = rss_mb(proc.pid)
        proc.terminate()
        code = proc.wait(15)
        reader.join(5)
        stderr = proc.stderr.read() if proc.stderr else ""
    finally:
        fleet.stop()
    kind = f"{args.busy:.0%} busy at 10 lines/s" if args.busy > 0 else "demo scripts at 2x speed"
    print(
        f"{args.agents} agents ({kind}), {elapsed:.0f} s measured after {args.warmup:.0f} s warm-up"
    )
    print(
        f"headless CPU: {used / elapsed * 100:.1f}% of one core ({used:.2f} s), RSS {memory:.0f} MB"
    )
    print("events: " + ", ".join(f"{k}={v}" for k, v in sorted(counts.items())))
    print(f"exit status after SIGTERM: {code}")
    if code != 0 and stderr:
        print(stderr[-2000:])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
