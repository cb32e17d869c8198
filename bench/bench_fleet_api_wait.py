"""Benchmark ``nbs-tui wait``: what a wait costs while it waits (one ``tmux list-panes`` with the
lease every 0.5 s), in CPU, on a server of N agents, against the same server left alone.

Run on demand (not part of the test suite)::

    .venv/bin/python bench/bench_fleet_api_wait.py                # N = 50, 500; 20 s each
    .venv/bin/python bench/bench_fleet_api_wait.py --sizes 50 --seconds 10

For each N: a private tmux server with N panes (``cat``), each published idle the way the lease
holder publishes it (`PaneOptionsPublisher`); no service. Then, each for ``--seconds``:

- ``alone``: nothing runs; the tmux server's CPU (utime+stime from /proc) is the baseline;
- ``--timeout 0``: a wait that looks once and ends: its start-up, in CPU seconds;
- ``wait 1``: ``nbs-tui wait %0 --until done --timeout S`` as a process (never done: idle all
  along, so it looks until the timeout); its CPU (its rusage, its tmux clients included) and the
  server's;
- ``wait all``: the same on every one of the N agents (one ``list-panes`` serves them all).

CPU is in percent of one core over the period. The wait's own is counted without its start-up
(Python, the first listing, one look): a ``--timeout 0`` wait is timed first and taken off. Results: a markdown table on stdout and in
bench/results/fleet-api-wait-YYYYmmdd-HHMMSS.md (gitignored).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

from bench_fleet_api import make_fleet  # noqa: E402

from nbs_tui.core.fleet.model import ServerAddress  # noqa: E402
from nbs_tui.sidecar.pane_options import PaneOptionsPublisher, PublishedState  # noqa: E402
from nbs_tui.tmux.commands import TmuxServerCommands  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def server_cpu(socket: str) -> float:
    pid = subprocess.run(["tmux", "-L", socket, "display-message", "-p", "#{pid}"], capture_output=True, text=True, check=True)
    fields = Path(f"/proc/{pid.stdout.strip()}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def run_wait(socket: str, env: dict[str, str], targets: list[str], seconds: float) -> tuple[float, float, float, int]:
    """One ``wait --until done --timeout SECONDS`` on agents idle all along: (its CPU seconds,
    its wall seconds, the tmux server's CPU seconds meanwhile, its looks)."""
    before = server_cpu(socket)
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "nbs_tui", "-L", socket, "wait", *targets, "--until", "done",
         "--timeout", f"{seconds:g}", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True,
    )  # fmt: skip
    out = proc.stdout.read() if proc.stdout else "{}"
    _, status, usage = os.wait4(proc.pid, 0)
    took = time.monotonic() - start
    assert os.waitstatus_to_exitcode(status) == 124, status
    return usage.ru_utime + usage.ru_stime, took, server_cpu(socket) - before, int(json.loads(out)["looks"])


def measure(n: int, seconds: float) -> list[tuple[str, float, float, int]]:
    """Per case: (its name, the wait's CPU % of a core while it waits, start-up taken off; the
    tmux server's CPU % over the same time; the wait's looks)."""
    socket = f"nbs-bench-wait-{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "NBS_"))}
    env["NBS_SERVICE"] = "off"
    rows: list[tuple[str, float, float, int]] = []
    try:
        panes = make_fleet(socket, n)
        commands = TmuxServerCommands.for_server(ServerAddress(socket_name=socket))
        now = int(time.time())
        PaneOptionsPublisher(commands).publish({p: PublishedState("idle", "", now) for p in panes})
        before = server_cpu(socket)
        time.sleep(seconds)
        rows.append(("alone", 0.0, 100 * (server_cpu(socket) - before) / seconds, 0))
        cpu0, took0, server0, looks0 = run_wait(socket, env, panes[:1], 0)  # start-up and one look
        rows.append(("--timeout 0 (start-up, CPU s)", cpu0, 100 * server0 / took0, looks0))
        for case, targets in (("wait 1", panes[:1]), (f"wait all {n}", panes)):
            cpu, took, server, looks = run_wait(socket, env, targets, seconds)
            rows.append((case, 100 * (cpu - cpu0) / (took - took0), 100 * server / took, looks))
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 500])
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    lines = [
        f"| agents | case | wait's CPU while waiting (% of a core) | tmux server's CPU (%) | looks in {args.seconds:g} s |",
        "|---|---|---|---|---|",
    ]
    for n in args.sizes:
        for case, mine, server, looks in measure(n, args.seconds):
            lines.append(f"| {n} | {case} | {mine:.2f} | {server:.2f} | {looks} |")
            print(lines[-1], flush=True)
    table = "\n".join(lines)
    print(table)
    results = BENCH / "results"
    results.mkdir(exist_ok=True)
    (results / f"fleet-api-wait-{time.strftime('%Y%m%d-%H%M%S')}.md").write_text(table + "\n")


if __name__ == "__main__":
    main()
