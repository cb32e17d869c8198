"""Where ``nbs-tui --headless`` spends its CPU: per thread, and per function under cProfile.

    .venv/bin/python bench/profile_headless.py --agents 200 --busy 0.25 --seconds 20 [--code PATH]
        [--no-cprofile]

Starts the demo fleet of bench_headless.py (``DemoFleet.start_busy``), runs ``--headless
--poll-interval 10`` from ``--code`` (default: this checkout) in a child that wraps every
thread's ``run`` to take its CPU time (``time.thread_time``) and, unless ``--no-cprofile``,
a cProfile of it; after the warm-up it measures for ``--seconds``, stops the child with SIGTERM
and prints each thread's CPU (% of one core over the child's life, the warm-up included) and
the top functions by cumulative and own time over all threads. cProfile slows Python code by
about 2x, and more for many small calls: read its shares, not its absolute times; the
per-thread CPU without ``--no-cprofile`` is inflated the same way.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

CHILD = r"""
import cProfile, os, pstats, runpy, sys, threading, time, io
use_profile = sys.argv[1] == "1"
top = int(sys.argv[2])
sys.argv = ["nbs_tui", *sys.argv[3:]]
times = {}
profiles = []
original = threading.Thread.run
def run(self):
    prof = cProfile.Profile() if use_profile else None
    if prof is not None:
        profiles.append(prof)
        prof.enable()
    try:
        original(self)
    finally:
        if prof is not None:
            prof.disable()
        times[self.name] = times.get(self.name, 0.0) + time.thread_time()
threading.Thread.run = run
start = time.monotonic()
main = cProfile.Profile() if use_profile else None
if main is not None:
    profiles.append(main)
    main.enable()
try:
    runpy.run_module("nbs_tui", run_name="__main__")
except SystemExit:
    pass
finally:
    if main is not None:
        main.disable()
    times["MainThread"] = time.thread_time()
    wall = time.monotonic() - start
    out = open(os.environ["NBS_PROFILE_OUT"], "w") if os.environ.get("NBS_PROFILE_OUT") else sys.stderr
    print(f"\n== CPU per thread over {wall:.1f} s (% of one core)", file=out)
    merged = {}
    for name, cpu in times.items():
        key = name.split(" ")[0].rstrip("0123456789-_") or name
        merged[key] = merged.get(key, 0.0) + cpu
    total = sum(merged.values())
    for name, cpu in sorted(merged.items(), key=lambda kv: -kv[1]):
        print(f"{100 * cpu / wall:6.1f} %  {name}", file=out)
    print(f"{100 * total / wall:6.1f} %  all threads", file=out)
    out.flush()  # the dashboard may end the process with os._exit: no buffer is flushed then
    if profiles:
        stats = pstats.Stats(profiles[0], stream=out)
        for prof in profiles[1:]:
            try:
                stats.add(prof)
            except TypeError:
                pass
        if os.environ.get("NBS_PROFILE_OUT"):
            stats.dump_stats(os.environ["NBS_PROFILE_OUT"] + ".prof")  # for pstats' callers
        stats.strip_dirs()
        print("\n== cumulative", file=out)
        stats.sort_stats("cumulative").print_stats(top)
        print("\n== own time", file=out)
        stats.sort_stats("tottime").print_stats(top)
        out.flush()
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, default=200)
    parser.add_argument("--busy", type=float, default=0.25)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--warmup", type=float, default=8.0)
    parser.add_argument("--code", type=Path, default=REPO)
    parser.add_argument("--no-cprofile", action="store_true")
    parser.add_argument("--top", type=int, default=45)
    args = parser.parse_args()

    from nbs_tui.demo.launcher import DemoFleet

    fleet = DemoFleet.start_busy(args.agents, args.busy)
    try:
        time.sleep(args.warmup)
        env = dict(os.environ, PYTHONPATH=str(args.code))
        cmd = [sys.executable, "-c", CHILD, "0" if args.no_cprofile else "1", str(args.top),
               *fleet.server.tmux_args(), "--headless", "--poll-interval", "10"]  # fmt: skip
        child = subprocess.Popen(cmd, cwd=args.code, env=env, stdout=subprocess.DEVNULL)
        time.sleep(args.warmup + args.seconds)
        child.send_signal(signal.SIGTERM)
        child.wait(60)
    finally:
        fleet.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
