"""Benchmark ``nbs-tui agents --json``: its latency on a server of N agents, against reading
tmux alone and against capturing every pane (what it must not do); and ``nbs-tui send``: the
command to the text submitted.

Run on demand (not part of the test suite)::

    .venv/bin/python bench/bench_fleet_api.py                 # N = 50, 500; 7 rounds
    .venv/bin/python bench/bench_fleet_api.py --sizes 50 --rounds 3
    .venv/bin/python bench/bench_fleet_api.py --send --rounds 7

``--send``: a private server with one fake ``claude`` (tests/tmux/test_sidecar_runner.py's: a
Claude-Code-like screen that logs every key and works for a second after a submit) and a lease
holder (``nbs-tui --headless``, poll off, so only the sends type). Each round waits until the
holder publishes the agent idle, then times, wall clock, median of the rounds:

- ``send``: ``nbs-tui send TARGET TEXT --json`` as a process, to its exit (it exits once the
  holder has seen the text leave the box: submitted); a 16-character and a 100-character text;
- ``asked``: the part of that from the request set in tmux to the answer (the document's
  ``seconds``): the holder's ticks, paste, Enter and the looks between;
- ``agents --json``: the same server, a process, in the same run (the baseline: Python start-up,
  the target's listing).

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


def measure_send(rounds: int) -> list[str]:
    """The ``--send`` table's rows (module docstring)."""
    import json
    import tempfile

    from tests.tmux.test_sidecar_runner import write_fake_claude

    socket = f"nbs-bench-send-{uuid.uuid4().hex[:8]}"
    tmux = ["tmux", "-L", socket]
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TMUX", "NBS_"))}
        env.update(
            HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_STATE_HOME=str(home / ".state"),
            NBS_SERVICE="off", NBS_POLL_DISABLE="1",
        )  # fmt: skip
        fake = write_fake_claude(home / "bin" / "claude")
        log = home / "agent.log"
        subprocess.run([*tmux, "new-session", "-d", "-s", "bench", "-x", "160", "-y", "40"], check=True)
        out = subprocess.run(
            [*tmux, "new-window", "-d", "-P", "-F", "#{pane_id}", "-n", "worker", f"{fake} idle {log}"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        pane = out.stdout.strip()
        holder = subprocess.Popen(
            [sys.executable, "-m", "nbs_tui", "-L", socket, "--headless"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=ROOT,
        )  # fmt: skip

        def idle() -> None:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                state = subprocess.run([*tmux, "display", "-p", "-t", pane, "#{@nbs_state}"], capture_output=True, text=True)
                if state.stdout.strip() == "idle":
                    return
                time.sleep(0.1)
            raise RuntimeError("the agent was not published idle within 60 s")

        def submits() -> int:
            return sum(1 for line in log.read_text().splitlines() if line.startswith("SUBMIT "))

        rows = []
        try:
            for label, text in (("16 chars", "build the parser"), ("100 chars", ("port module_7 to the new API " * 4)[:100])):
                sends, asked, baseline = [], [], []
                for _ in range(rounds):
                    idle()
                    before = submits()
                    start = time.perf_counter()
                    done = subprocess.run(
                        [sys.executable, "-m", "nbs_tui", "-L", socket, "send", pane, text, "--json"],
                        capture_output=True, text=True, env=env, cwd=ROOT, check=False,
                    )  # fmt: skip
                    sends.append(time.perf_counter() - start)
                    if done.returncode != 0 or submits() != before + 1:
                        raise RuntimeError(f"send failed ({done.returncode}): {done.stderr}")
                    asked.append(json.loads(done.stdout)["seconds"])
                    start = time.perf_counter()
                    subprocess.run(
                        [sys.executable, "-m", "nbs_tui", "-L", socket, "agents", "--json"],
                        capture_output=True, env=env, cwd=ROOT, check=True,
                    )  # fmt: skip
                    baseline.append(time.perf_counter() - start)
                send_s, asked_s, base_s = (statistics.median(x) for x in (sends, asked, baseline))
                rows.append(
                    f"| {label} | {send_s * 1000:.0f} | {asked_s * 1000:.0f} | {base_s * 1000:.0f} "
                    f"| {send_s / base_s:.1f} | {min(sends) * 1000:.0f}-{max(sends) * 1000:.0f} |"
                )
                print(rows[-1], flush=True)
        finally:
            holder.terminate()
            holder.wait(10)
            subprocess.run([*tmux, "kill-server"], capture_output=True, check=False)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 500])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--send", action="store_true", help="time nbs-tui send to the text submitted instead")
    args = parser.parse_args()
    if args.send:
        lines = [
            "| text | send (ms) | asked: request to answer (ms) | agents --json (ms) | send / agents | send range (ms) |",
            "|---|---|---|---|---|---|",
            *measure_send(args.rounds),
        ]
        table = "\n".join(lines)
        print(table)
        (BENCH / "results").mkdir(exist_ok=True)
        (BENCH / "results" / f"fleet-api-send-{time.strftime('%Y%m%d-%H%M%S')}.md").write_text(table + "\n")
        return
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
