"""Benchmark ``nbs-tui agents --json``: its latency on a server of N agents, against reading
tmux alone and against capturing every pane (what it must not do).

Run on demand (not part of the test suite)::

    .venv/bin/python bench/bench_fleet_api.py                 # N = 50, 500; 7 rounds
    .venv/bin/python bench/bench_fleet_api.py --sizes 50 --rounds 3

For each N: a private tmux server with N panes (``cat``, 4 per window), each published as an
agent the way the lease holder publishes it (``@nbs_state``..., `PaneOptionsPublisher`), one in
ten waiting on a question (those are captured, for their question's line). No service (the
command is timed, not a service start). Timed, median of ``--rounds`` runs, wall clock:

- ``agents --json``: the command as a process (Python start-up included);
- ``list_agents``: the same listing in this process (no start-up);
- ``list-panes``: one ``tmux list-panes -a`` process, the floor of any listing;
- ``capture all``: one ``tmux`` process capturing every pane (``capture-pane`` chained with
  ``;``), the least a listing that read every screen again would cost, before any detection.

Results: a markdown table on stdout and in bench/results/fleet-api-YYYYmmdd-HHMMSS.md (gitignored).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))

from nbs_tui.core.fleet.model import ServerAddress  # noqa: E402
from nbs_tui.fleet_api.agent_listing import list_agents  # noqa: E402
from nbs_tui.sidecar.pane_options import PaneOptionsPublisher, PublishedState  # noqa: E402
from nbs_tui.tmux.commands import TmuxServerCommands  # noqa: E402


def make_fleet(socket: str, n: int) -> list[str]:
    tmux = ["tmux", "-L", socket]
    subprocess.run([*tmux, "new-session", "-d", "-s", "bench", "-x", "200", "-y", "50", "cat"], check=True)
    for i in range(1, n):
        if i % 4 == 0:
            subprocess.run([*tmux, "new-window", "-d", "-t", "bench", "cat"], check=True)
        else:
            subprocess.run([*tmux, "split-window", "-d", "-t", f"bench:{i // 4}", "cat"], check=True)
            subprocess.run([*tmux, "select-layout", "-t", f"bench:{i // 4}", "tiled"], check=True, capture_output=True)
    out = subprocess.run([*tmux, "list-panes", "-a", "-F", "#{pane_id}"], capture_output=True, text=True, check=True)
    panes = out.stdout.split()
    commands = TmuxServerCommands.for_server(ServerAddress(socket_name=socket))
    now = int(time.time())
    PaneOptionsPublisher(commands).publish(
        {p: PublishedState("question", "question", now) if i % 10 == 0 else PublishedState("idle", "", now) for i, p in enumerate(panes)}
    )
    return panes


def median_seconds(rounds: int, step: Callable[[], object]) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(n: int, rounds: int) -> dict[str, float]:
    socket = f"nbs-bench-api-{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "NBS_"))}
    env["NBS_SERVICE"] = "off"
    try:
        panes = make_fleet(socket, n)
        commands = TmuxServerCommands.for_server(ServerAddress(socket_name=socket))
        listed = list_agents(commands, "local", f"L-{socket}", ())
        assert len(listed) == len(panes) == n, (len(listed), n)
        capture_all: list[str] = ["tmux", "-L", socket]
        for pane in panes:
            capture_all += ["capture-pane", "-p", "-t", pane, ";"]
        return {
            "agents --json": median_seconds(rounds, lambda: subprocess.run(
                [sys.executable, "-m", "nbs_tui", "-L", socket, "agents", "--json"],
                capture_output=True, env=env, check=True,
            )),
            "list_agents": median_seconds(rounds, lambda: list_agents(commands, "local", f"L-{socket}", ())),
            "list-panes": median_seconds(rounds, lambda: subprocess.run(
                ["tmux", "-L", socket, "list-panes", "-a", "-F", "#{pane_id} #{@nbs_state}"], capture_output=True, check=True,
            )),
            "capture all": median_seconds(rounds, lambda: subprocess.run(capture_all[:-1], capture_output=True, check=True)),
        }
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 500])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    lines = [
        "| agents | agents --json (ms) | list_agents in-process (ms) | tmux list-panes (ms) | capture every pane (ms) | in-process / capture all |",
        "|---|---|---|---|---|---|",
    ]
    for n in args.sizes:
        got = measure(n, args.rounds)
        ms = {k: v * 1000 for k, v in got.items()}
        lines.append(
            f"| {n} | {ms['agents --json']:.0f} | {ms['list_agents']:.1f} | {ms['list-panes']:.1f} | {ms['capture all']:.1f} "
            f"| {got['list_agents'] / got['capture all']:.2f} |"
        )
        print(lines[-1], flush=True)
    table = "\n".join(lines)
    print(table)
    results = BENCH / "results"
    results.mkdir(exist_ok=True)
    (results / f"fleet-api-{time.strftime('%Y%m%d-%H%M%S')}.md").write_text(table + "\n")


if __name__ == "__main__":
    main()
