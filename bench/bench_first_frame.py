"""The dashboard's first full frame, launch after launch, for one or more checkouts, interleaved.

Run on demand (not part of the test suite)::

    .venv/bin/python bench/bench_first_frame.py                      # this checkout, 10 launches
    .venv/bin/python bench/bench_first_frame.py --rounds 14 ../before .   # A/B, interleaved
    .venv/bin/python bench/bench_first_frame.py --config-text 'notify_urls = ["json://127.0.0.1:9/"]'

One 50-agent demo fleet (`DemoFleet.start_busy`, as `bench_app.py`) with the marker pane; then
``--rounds`` rounds, each launching the CLI once per checkout (in turn, the order reversed every
other round, so load drifts hit every checkout alike), exactly as `bench_app.py` launches it: a
160x48 pty, ``python -m nbs_tui -L SOCKET --no-poll``, run from the checkout with the Python of
its ``.venv`` (a checkout without one may symlink another's: ``-m`` imports the checkout's own
``nbs_tui`` first). Per launch: the first full frame as `bench_app.py` defines it (``N panes`` in
the status bar and a marker in the mirror), and the process's CPU time by then (all threads, from
``/proc/PID/stat``), which moves less with the machine's other load than the wall time does. The
app is quit once it is measured; no CPU window, no latencies (`bench_app.py` has those).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCH))

from bench_app import COLS, MARKED, ROWS, AppInPty, Markers, app_argv, app_env, compile_checkout  # noqa: E402

from nbs_tui.demo.launcher import DemoFleet  # noqa: E402


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def launch_checkout(
    checkout: Path, socket: str, config: Path, home: Path, n: int, size: tuple[int, int] = (COLS, ROWS)
) -> AppInPty:
    """`bench_app.app_argv`'s app, run from ``checkout`` with the Python of its ``.venv``, in a
    terminal of ``size`` (columns, rows)."""
    python = str(checkout / ".venv" / "bin" / "python")
    return AppInPty([python, *app_argv(socket, config)[1:]], app_env(home), n, checkout, size=size)


def prepare(paths: list[Path], prefix: str, config_text: str = "") -> tuple[list[Path], Path, Path]:
    """The checkouts, resolved and byte-compiled, and a scratch HOME and a config (``config_text``,
    empty by default) to launch them with."""
    checkouts = [c.resolve() for c in paths]
    for checkout in checkouts:
        compile_checkout(checkout, str(checkout / ".venv" / "bin" / "python"))
    work = Path(tempfile.mkdtemp(prefix=prefix))
    home = work / "home"
    home.mkdir()
    config = work / "config.toml"
    config.write_text(config_text, encoding="utf-8")
    return checkouts, home, config


def interleaved(checkouts: list[Path], rounds: int) -> Iterator[Path]:
    """Each checkout once per round, the order reversed every other round (load drift hits all alike)."""
    for round_ in range(rounds):
        yield from checkouts if round_ % 2 == 0 else checkouts[::-1]


def launch(checkout: Path, socket: str, config: Path, home: Path, n: int) -> tuple[float, float]:
    """(seconds to the first full frame, CPU seconds by then) of one launch."""
    app = launch_checkout(checkout, socket, config, home, n)
    try:
        if not app.full_frame.wait(60):
            raise RuntimeError(f"{checkout}: no full frame; last output: {app.output()[-600:]!r}")
        cpu = cpu_seconds(app.proc.pid)
        return (app.full_frame_ns - app.launched_ns) / 1e9, cpu
    finally:
        app.quit()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkouts", nargs="*", type=Path, default=[ROOT], help="checkouts to launch (default: this one)")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--config-text", default="", help="the config file's text (default: empty)")
    args = parser.parse_args()
    checkouts, home, config = prepare(args.checkouts, "nbs-first-frame-", args.config_text)
    results: dict[Path, list[tuple[float, float]]] = {c: [] for c in checkouts}
    load_before = os.getloadavg()
    fleet = DemoFleet.start_busy(args.agents, busy_fraction=0.25, marker_dir=home.parent / "markers")
    try:
        agent = fleet.agent(MARKED)
        assert agent.marker_fifo is not None and agent.marker_file is not None
        markers = Markers(agent.marker_fifo, agent.marker_file)
        markers.start()
        socket = fleet.server.socket_name
        assert socket is not None
        time.sleep(2.0)
        for checkout in interleaved(checkouts, args.rounds):
            frame, cpu = launch(checkout, socket, config, home, args.agents)
            results[checkout].append((frame, cpu))
            print(f"{checkout.name}: first full frame {frame:.3f} s, CPU {cpu:.2f} s", file=sys.stderr, flush=True)
            time.sleep(1.0)
        markers.stop()
    finally:
        fleet.stop()
    load_after = os.getloadavg()
    print(f"N={args.agents}, {args.rounds} launches per checkout, interleaved; load average "
          f"{load_before[0]:.2f} before, {load_after[0]:.2f} after\n")
    print("| checkout | first full frame median (min-max) | CPU by then, median (mean) |")
    print("|---|---|---|")
    for checkout, runs in results.items():
        frames = [f for f, _ in runs]
        cpus = [c for _, c in runs]
        print(f"| {checkout.name} | {statistics.median(frames):.3f} s ({min(frames):.2f}-{max(frames):.2f}) "
              f"| {statistics.median(cpus):.3f} s ({statistics.mean(cpus):.3f}) |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
