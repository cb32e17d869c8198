"""Where the dashboard spends its CPU: per thread, and per function under cProfile.

    .venv/bin/python bench/profile_app.py --agents 50 --seconds 20 [--no-cprofile]
    .venv/bin/python bench/profile_app.py --shells 200 --busy 48 --size 200 60   # bench_commits' fleet
    .venv/bin/python bench/profile_app.py --shells 1000 --busy 0 --code ../before  # another checkout

The demo fleet of bench_app.py (``DemoFleet.start_busy``, a quarter busy), or with ``--shells``
bench_commits.py's (N plain panes, ``--busy`` of them printing, the rest idle shells), the real
CLI (``-L SOCKET --no-poll``, from ``--code``: default this checkout) in a pty of ``--size``
(160x48) as bench_app.py runs it, wrapped as
bench/profile_headless.py wraps ``--headless`` (each thread's CPU time, and a cProfile of every
thread unless ``--no-cprofile``); after ``--seconds`` the app is quit with ``q`` and the
report is printed. The service the dashboard may start is a process of its own: not in it.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from bench_app import AppInPty, app_env  # noqa: E402
from bench_mirror import Bench  # noqa: E402
from profile_headless import CHILD  # noqa: E402

from nbs_tui.demo.launcher import DemoFleet  # noqa: E402


class DrainedApp(AppInPty):
    """bench_app's app in a pty, its output only drained (no screen kept: nothing to parse)."""

    def _read(self) -> None:
        while True:
            try:
                data = os.read(self.master, 1 << 16)
            except OSError:
                break
            if not data:
                break
            self.out_bytes += len(data)
            self.tail.append(data)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--agents", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--no-cprofile", action="store_true")
    parser.add_argument("--top", type=int, default=50)
    parser.add_argument("--shells", type=int, default=0, help="bench_commits.py's fleet of N plain panes instead")
    parser.add_argument("--busy", type=int, default=48, help="with --shells: panes printing a line every ~100 ms")
    parser.add_argument("--size", type=int, nargs=2, default=[160, 48], metavar=("COLS", "ROWS"))
    parser.add_argument("--code", type=Path, default=REPO, help="the checkout whose nbs_tui runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        fleet: DemoFleet | Bench
        if args.shells:
            fleet = Bench(args.shells, work, busy=args.busy, idle="bash --noprofile --norc")  # as bench_commits.py
            fleet.start()
            time.sleep(3.0)  # the shells start
            tmux_args, panes = ["-L", fleet.socket], args.shells
        else:
            fleet = DemoFleet.start_busy(args.agents, 0.25)
            tmux_args, panes = fleet.server.tmux_args(), args.agents
        try:
            (work / "home").mkdir()
            config = work / "empty.toml"
            config.write_text("")
            out = work / "profile.txt"
            env = dict(app_env(work / "home"), NBS_PROFILE_OUT=str(out))
            argv = [sys.executable, "-c", CHILD, "0" if args.no_cprofile else "1", str(args.top),
                    *tmux_args, "--no-poll", "--config", str(config)]  # fmt: skip
            app = DrainedApp(argv, env, panes, args.code.resolve(), size=(args.size[0], args.size[1]))
            time.sleep(args.seconds)
            app.quit()
            deadline = time.monotonic() + 30
            while not (out.exists() and out.stat().st_size) and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(1)
            print(out.read_text() if out.exists() else "no profile written:\n" + app.output()[-2000:])
            raw = Path(str(out) + ".prof")
            if raw.exists():
                keep = REPO / "bench" / "results" / f"app-cprofile-{panes}-{time.strftime('%Y%m%d-%H%M%S')}.prof"
                keep.parent.mkdir(parents=True, exist_ok=True)
                keep.write_bytes(raw.read_bytes())
                print(f"(raw stats for pstats: {keep.relative_to(REPO)})")
        finally:
            fleet.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
