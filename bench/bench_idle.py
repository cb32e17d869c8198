"""What the dashboard costs while its fleet is idle, for one or more checkouts, interleaved.

Run on demand (not part of the test suite)::

    .venv/bin/python bench/bench_idle.py                         # this checkout
    .venv/bin/python bench/bench_idle.py --rounds 4 ../before .  # A/B, interleaved

Most of the time an operator's agents sit waiting: nothing on any pane moves. One demo fleet of
``--agents`` imitation agents, none busy (`DemoFleet.start_busy` with ``busy_fraction=0``); then
``--rounds`` rounds, each launching the CLI once per checkout (the order reversed every other
round), as `bench_app.py` launches it (a 160x48 pty, ``python -m nbs_tui -L SOCKET --no-poll``,
the checkout's own ``.venv`` Python). Once the fleet is listed and ``--settle`` seconds have
passed, the app's CPU (all threads, from ``/proc/PID/stat``) is measured over ``--seconds``;
then it is quit. The service it starts is its own process and not counted (`bench_app.py`
counts everything). Prints one Markdown table: CPU in % of one core, median and range.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

from bench_first_frame import cpu_seconds, interleaved, launch_checkout, prepare  # noqa: E402

from nbs_tui.demo.launcher import DemoFleet  # noqa: E402


def idle_cpu(checkout: Path, socket: str, config: Path, home: Path, n: int, settle: float, seconds: float) -> float:
    """% of one core the app used over ``seconds`` on the idle fleet, after it listed it and settled."""
    app = launch_checkout(checkout, socket, config, home, n)
    try:
        deadline = time.monotonic() + 60
        while not app.listed_ns:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{checkout}: fleet never listed; last output: {app.output()[-600:]!r}")
            time.sleep(0.1)
        time.sleep(settle)
        before, started = cpu_seconds(app.proc.pid), time.monotonic()
        time.sleep(seconds)
        used, elapsed = cpu_seconds(app.proc.pid) - before, time.monotonic() - started
        return 100 * used / elapsed
    finally:
        app.quit()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkouts", nargs="*", type=Path, default=[ROOT], help="checkouts to launch (default: this one)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--settle", type=float, default=8.0, help="seconds after the fleet is listed")
    parser.add_argument("--seconds", type=float, default=20.0, help="the measuring window")
    args = parser.parse_args()
    checkouts, home, config = prepare(args.checkouts, "nbs-idle-")
    results: dict[Path, list[float]] = {c: [] for c in checkouts}
    load_before = os.getloadavg()
    fleet = DemoFleet.start_busy(args.agents, busy_fraction=0.0)
    try:
        socket = fleet.server.socket_name
        assert socket is not None
        time.sleep(2.0)
        for checkout in interleaved(checkouts, args.rounds):
            cpu = idle_cpu(checkout, socket, config, home, args.agents, args.settle, args.seconds)
            results[checkout].append(cpu)
            print(f"{checkout.name}: {cpu:.2f} % of a core", file=sys.stderr, flush=True)
    finally:
        fleet.stop()
    load_after = os.getloadavg()
    print(f"N={args.agents} idle agents, {args.rounds} launches per checkout, interleaved, windows of "
          f"{args.seconds:.0f} s; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after\n")
    print("| checkout | app CPU, median (min-max) |")
    print("|---|---|")
    for checkout, cpus in results.items():
        print(f"| {checkout.name} | {statistics.median(cpus):.2f} % ({min(cpus):.2f}-{max(cpus):.2f}) |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
